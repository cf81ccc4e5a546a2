"""Multi-aspect page annotation (the Trident index): page records and T/E/S concepts, built once per document.

from trident_local.annotate import annotation_stage
index.doc_stages.append(annotation_stage(index))   # runs during `trident index --annotate`
annotate_index(index)                                # or later, resumable per document
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trident_local.annotate.cache import STAGE, LoadedAnnotation, has_annotation, load
from trident_local.store.stages import Stage, StageRunner, guarded

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
    """The per-document stage: takes its models from the index's runtime, then annotates and saves one document."""

    def __init__(self, index: Index, profile: str | None = None):
        self.index = index
        self.profile = profile if profile is not None else index.models.profile_name("chat")
        self.calls: dict[str, dict] = {}  # doc_id -> model call counters (requests, repairs, length cuts)

    def models(self):
        """(embedder, chat model or None), built by the runtime on first use."""
        return self.index.models.embedder, self.index.models.get("chat", self.profile)

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


def annotation_stage(index: Index, profile: str | None = None) -> Stage:
    """The annotation stage: append to ``Index.doc_stages``; the index marks it per document."""
    annotator = _Annotator(index, profile)
    return Stage(STAGE, annotator, annotator.up_to_date)


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
    store = index.store
    stage = annotation_stage(index, profile)
    runner = StageRunner(store, [stage])
    t0 = time.perf_counter()
    rep = AnnotateReport([], [], [])
    with store.writer_lock():
        for doc_id in [store.resolve(d) for d in docs] if docs else store.doc_ids():
            entry = store.manifest.documents[doc_id]
            if entry.stages.get(STAGE) and not has_annotation(store, doc_id):
                store.mark(doc_id, STAGE, False)  # marked, but its files are gone: redo it
            if not runner.pending(doc_id, force=force):
                rep.skipped.append(doc_id)
                continue
            t1 = time.perf_counter()
            ran, error = guarded(f"annotating {entry.file_name}",
                                 lambda d=doc_id: runner.run(store.document(d), force=force))
            if ran is None:
                rep.failed.append((doc_id, error))
            elif not ran:  # found saved by a run killed before marking it
                rep.skipped.append(doc_id)
            else:
                rep.annotated.append(doc_id)
                rep.pages += entry.n_pages
                if on_doc:
                    on_doc(doc_id, entry.n_pages, time.perf_counter() - t1)
    rep.seconds = time.perf_counter() - t0
    rep.calls = stage.run.calls  # the stage's runner is the annotator
    return rep
