"""Multi-aspect page annotation (the Trident index): page records and T/E/S concepts, built once per document.

from trident_local.annotate import annotation_stage
index.doc_stages.append(annotation_stage(index))   # runs during `trident index --annotate`
annotate_index(index)                                # or later, resumable per document
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trident_local.annotate.cache import STAGE, LoadedAnnotation, has_annotation, load

if TYPE_CHECKING:
    from trident_local.docs.model import Document
    from trident_local.index import Index

__all__ = [
    "STAGE",
    "AnnotateReport",
    "LoadedAnnotation",
    "annotate_index",
    "annotation_stage",
    "has_annotation",
    "load",
]


class _Annotator:
    """The per-document stage: builds its models on first use, then annotates and saves one document."""

    def __init__(self, index: Index, profile: str | None = None):
        self.index = index
        self.profile = profile if profile is not None else index.config.chat
        self._models = None
        self.calls: dict[str, dict] = {}  # doc_id -> model call counters (requests, repairs, length cuts)

    def models(self):
        if self._models is None:
            from trident_local.models.profiles import build_model

            embedder = build_model("embedder", self.index.config.embedder)
            chat = build_model("chat", self.profile)
            self._models = (embedder, chat)
        return self._models

    def __call__(self, doc: Document) -> None:
        from trident_local.annotate import cache
        from trident_local.annotate.pipeline import annotate_document

        embedder, chat = self.models()
        store = self.index.store
        image_of = (lambda page: store.page_image(doc.doc_id, page)) if chat is not None else None
        result = annotate_document(
            doc, embedder=embedder, chat=chat, chat_name=str(self.profile), image_of=image_of
        )
        if "chat" in result.annotation.stats:
            self.calls[doc.doc_id] = result.annotation.stats["chat"]
        result.annotation.stats["profile"] = str(self.profile)
        result.annotation.stats["embedder_profile"] = self.index.config.embedder
        cache.save(store, result)

    def up_to_date(self, doc_id: str) -> bool:
        """A saved annotation made with the same profiles (e.g. killed before the stage was marked)."""
        from trident_local.annotate import cache

        if not has_annotation(self.index.store, doc_id):
            return False
        try:
            stats = cache.load(self.index.store, doc_id).annotation.stats
        except Exception:  # unreadable or an older version: redo it
            return False
        return (
            stats.get("profile") == str(self.profile)
            and stats.get("embedder_profile") == self.index.config.embedder
        )


def annotation_stage(index: Index, profile: str | None = None) -> tuple[str, Callable[[Document], None]]:
    """("annotate", fn): append to ``Index.doc_stages``; the index marks the stage per document."""
    return STAGE, _Annotator(index, profile)


@dataclass
class AnnotateReport:
    annotated: list[str]
    skipped: list[str]
    failed: list[tuple[str, str]]
    pages: int = 0
    seconds: float = 0.0
    calls: dict[str, dict] = field(default_factory=dict)  # doc_id -> model call counters


def annotate_index(
    index: Index,
    *,
    profile: str | None = None,
    force: bool = False,
    docs: list[str] | None = None,
    on_doc: Callable[[str, int, float], None] | None = None,
) -> AnnotateReport:
    """Annotate every ingested document that is not annotated yet (all with ``force``); resumable."""
    import logging
    import time

    from trident_local.errors import TridentError

    store = index.store
    annotator = _Annotator(index, profile)
    t0 = time.perf_counter()
    rep = AnnotateReport([], [], [])
    with store.writer_lock():
        targets = [store.resolve(d) for d in docs] if docs else store.doc_ids()
        for doc_id in targets:
            entry = store.manifest.documents[doc_id]
            if not force and entry.stages.get(STAGE) and has_annotation(store, doc_id):
                rep.skipped.append(doc_id)
                continue
            t1 = time.perf_counter()
            if not force and annotator.up_to_date(doc_id):
                store.mark(doc_id, STAGE)
                rep.skipped.append(doc_id)
                continue
            try:
                doc = store.document(doc_id)
                annotator(doc)
            except TridentError:
                raise  # configuration problem (missing model): stop, nothing is lost
            except Exception as e:  # one bad document must not stop the others
                logging.getLogger(__name__).exception("annotating %s failed", entry.file_name)
                rep.failed.append((doc_id, f"{type(e).__name__}: {e}"))
                continue
            store.mark(doc_id, STAGE)
            rep.annotated.append(doc_id)
            rep.pages += doc.n_pages
            if on_doc:
                on_doc(doc_id, doc.n_pages, time.perf_counter() - t1)
    rep.seconds = time.perf_counter() - t0
    rep.calls = annotator.calls
    return rep
