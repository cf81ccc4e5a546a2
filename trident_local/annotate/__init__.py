"""Multi-aspect page annotation (the Trident index): page records and T/E/S concepts, built once per document.

from trident_local.annotate import annotation_stage
index.doc_stages.append(annotation_stage(index))   # runs during `trident index --annotate`
annotate_index(index)                                # or later, resumable per document
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from trident_local.annotate.cache import STAGE, LoadedAnnotation, has_annotation, load
from trident_local.store.stages import Stage, StageRunner, guarded

if TYPE_CHECKING:
    from trident_local.config import Config
    from trident_local.docs.model import Document
    from trident_local.models.runtime import Models
    from trident_local.store.index_store import IndexStore

__all__ = [
    "STAGE",
    "AnnotateReport",
    "LoadedAnnotation",
    "annotate_index",
    "annotate_one",
    "annotation_stage",
    "has_annotation",
    "load",
]


class IndexView(Protocol):
    """What annotation reads of an index (:class:`trident_local.index.Index`, which sits above it)."""

    store: IndexStore
    models: Models
    config: Config


class _Annotator:
    """The per-document stage: takes its models from the index's runtime, then annotates and saves one document."""

    def __init__(self, index: IndexView, profile: str | None = None):
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
        image_of = (lambda page: store.document_page_image(doc, page)) if chat is not None else None
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


def annotation_stage(index: IndexView, profile: str | None = None) -> Stage:
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


# (doc_id, error or "", seconds, model call counters or None) of one annotated document
DocResult = tuple[str, str, float, dict | None]
# Annotates the planned documents (the annotation stage, the documents' ids) and yields their results;
# the default runs them here, one after another (`trident annotate --ray`: scale.ray_annotate)
AnnotateDocs = Callable[[Stage, list[str]], Iterable[DocResult]]


def annotate_index(
    index: IndexView,
    *,
    profile: str | None = None,
    force: bool = False,
    docs: list[str] | None = None,
    on_doc: Callable[[str, int, float], None] | None = None,
    annotate_docs: AnnotateDocs | None = None,
) -> AnnotateReport:
    """Annotate every ingested document that is not annotated yet (all with ``force``); resumable.

    ``annotate_docs``: what annotates the planned documents (default: this process, one by one;
    :func:`trident_local.scale.ray_annotate.annotate_with_ray` passes Ray actors); this process
    plans, marks each finished document in the manifest and holds the writer lock throughout.
    """
    store = index.store
    stage = annotation_stage(index, profile)
    t0 = time.perf_counter()
    rep = AnnotateReport([], [], [])
    with store.writer_lock():
        todo = _plan(store, StageRunner(store, [stage]), stage, docs, force, rep)
        if annotate_docs is None:
            results: Iterable[DocResult] = _annotate_here(store, stage, todo)
        else:
            results = annotate_docs(stage, todo)
        for doc_id, error, seconds, calls in results:
            if error:
                rep.failed.append((doc_id, error))
                continue
            store.mark(doc_id, STAGE)  # the commit point: its files are written
            n_pages = store.manifest.documents[doc_id].n_pages
            rep.annotated.append(doc_id)
            rep.pages += n_pages
            if calls:
                rep.calls[doc_id] = calls
            if on_doc:
                on_doc(doc_id, n_pages, seconds)
    rep.seconds = time.perf_counter() - t0
    return rep


def _plan(
    store: IndexStore,
    runner: StageRunner,
    stage: Stage,
    docs: list[str] | None,
    force: bool,
    rep: AnnotateReport,
) -> list[str]:
    """The documents to annotate; finished ones go to ``rep.skipped`` (those saved by a run killed
    before marking them are marked here)."""
    todo = []
    for doc_id in [store.resolve(d) for d in docs] if docs else store.doc_ids():
        entry = store.manifest.documents[doc_id]
        if entry.stages.get(STAGE) and not has_annotation(store, doc_id):
            store.mark(doc_id, STAGE, False)  # marked, but its files are gone: redo it
        if not runner.pending(doc_id, force=force):
            rep.skipped.append(doc_id)
        elif not force and stage.saved is not None and stage.saved(doc_id):
            store.mark(doc_id, STAGE)
            rep.skipped.append(doc_id)
        else:
            todo.append(doc_id)
    return todo


def annotate_one(store: IndexStore, stage: Stage, doc_id: str) -> DocResult:
    """Run the annotation stage on one document (it writes the document's files); a failure fails
    that document only, a configuration error (TridentError, e.g. a missing model) propagates."""
    t1 = time.perf_counter()
    label = f"annotating {store.manifest.documents[doc_id].file_name}"
    _, error = guarded(label, lambda: stage.run(store.document(doc_id)))
    return doc_id, error, time.perf_counter() - t1, stage.run.calls.pop(doc_id, None)


def _annotate_here(store: IndexStore, stage: Stage, todo: list[str]) -> Iterator[DocResult]:
    for doc_id in todo:
        yield annotate_one(store, stage, doc_id)
