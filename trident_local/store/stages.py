"""The resumable per-document stage runner shared by indexing and annotation.

A document passes named stages in order (ingest, then e.g. ``dense``,
``colpali``, ``annotate``); the manifest marks each stage of each document as
soon as it finishes, so a killed run redoes at most the stage that was in
flight, and a re-run skips what is marked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from trident_local.docs.model import Document
from trident_local.errors import IngestError, StorageFull, TridentError
from trident_local.store.index_store import IndexStore

log = logging.getLogger(__name__)
T = TypeVar("T")


class Stage(NamedTuple):
    """``run(doc)`` writes the stage's files; ``saved(doc_id)`` (optional) says they are already
    there and current (written by a run killed before the stage was marked)."""

    name: str
    run: Callable[[Document], None]
    saved: Callable[[str], bool] | None = None

    def ensure(self, doc: Document, *, force: bool = False) -> bool:
        """Run the stage unless its files are already saved (or ``force``); True when it ran."""
        if force or self.saved is None or not self.saved(doc.doc_id):
            self.run(doc)
            return True
        return False


class StageRunner:
    """Run a document's unfinished stages in order and mark each in the manifest."""

    def __init__(self, store: IndexStore, stages: Sequence[Stage]):
        self.store = store
        self.stages = list(stages)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def pending(self, doc_id: str, *, force: bool = False) -> list[Stage]:
        entry = self.store.manifest.documents[doc_id]
        return [s for s in self.stages if force or not entry.stages.get(s.name)]

    def run(self, doc: Document, *, force: bool = False) -> list[str]:
        """The names of the stages that ran (those found saved are only marked)."""
        ran = []
        for stage in self.pending(doc.doc_id, force=force):
            if stage.ensure(doc, force=force):
                ran.append(stage.name)
            self.store.mark(doc.doc_id, stage.name)
        return ran


def guarded(label: str, fn: Callable[[], T], *, prefix: str = "") -> tuple[T | None, str]:
    """``(fn(), "")``, or ``(None, message)`` when one document fails (``prefix`` starts the
    message of an unexpected error; an IngestError already names its file).

    A bad file (IngestError) or any unexpected error fails that document only;
    any other TridentError is a configuration problem (e.g. a missing model)
    and propagates: stop, nothing is lost.
    """
    try:
        return fn(), ""
    except IngestError as e:
        return None, str(e)
    except TridentError:
        raise
    except OSError as e:
        if StorageFull.caused(e):  # every later document would fail the same way: stop, nothing is lost
            raise
        log.exception("%s failed", label)
        return None, f"{prefix}{type(e).__name__}: {e}"
    except Exception as e:
        log.exception("%s failed", label)
        return None, f"{prefix}{type(e).__name__}: {e}"
