"""The Python API: open or create an index, add PDFs (resumable), search it.

    index = Index.open("idx")
    hits = index.search("What was the revenue in 2020?", pool="rrf", doc="report.pdf", k=5)

The index owns the model runtime (``index.models``): every stage that runs on
it takes its models from there, so each model is built once per process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from trident_local.config import Config
from trident_local.docs.model import Document
from trident_local.docs.pdf_open import content_hash
from trident_local.errors import IngestError, TridentError
from trident_local.models.runtime import Models
from trident_local.query import Query
from trident_local.retrieve.base import Hit, Pool, get_pool
from trident_local.store.index_store import IndexStore

log = logging.getLogger(__name__)


@dataclass
class FileResult:
    path: str
    status: str  # indexed | resumed | skipped | failed
    doc_id: str = ""
    pages: int = 0
    seconds: float = 0.0
    error: str = ""


@dataclass
class AddReport:
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    @property
    def pages_indexed(self) -> int:
        return sum(f.pages for f in self.files if f.status in ("indexed", "resumed"))


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, folders searched recursively for *.pdf (sorted, de-duplicated)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*") if q.is_file() and q.suffix.lower() == ".pdf"))
        else:
            out.append(p)
    seen, unique = set(), []
    for p in out:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


_WORKER_MODELS = Models()  # a worker process's own runtime (models do not cross processes)


def _ingest_worker(path: str, doc_id: str, ocr_profile: str) -> Document:
    """Runs in a worker process: ingestion is CPU-bound PyMuPDF work."""
    from trident_local.docs.ingest import ingest_pdf

    try:
        ocr = _WORKER_MODELS.get("ocr", ocr_profile)
    except TridentError:
        ocr = None
    return ingest_pdf(path, ocr=ocr, doc_id=doc_id)


class Index:
    """An index directory with its pools. Cheap to open; pools load on first use."""

    def __init__(self, store: IndexStore, models: Models | None = None):
        self.store = store
        self.models = models if models is not None else Models(store.config)
        self._pools: dict[str, Pool] = {}
        self.doc_stages: list[tuple[str, Callable[[Document], None]]] = []

    @classmethod
    def open(cls, root: str | Path) -> Index:
        return cls(IndexStore.open(root))

    @classmethod
    def create(cls, root: str | Path, config: Config | None = None) -> Index:
        return cls(IndexStore.open_or_create(root, config))

    @property
    def config(self) -> Config:
        return self.store.config

    def pool(self, name: str) -> Pool:
        if name not in self._pools:
            self._pools[name] = get_pool(name, self.store, self.models)
        return self._pools[name]

    def documents(self) -> list[Document]:
        return [self.store.document(d) for d in self.store.doc_ids()]

    def resolve(self, name: str) -> str:
        return self.store.resolve(name)

    # -- indexing ------------------------------------------------------------------------------------
    def stages(self) -> list[tuple[str, Callable[[Document], None]]]:
        """Per-document stages after ingestion, in order: pools that prepare features, then extras."""
        out = [(name, self.pool(name).prepare) for name in self.config.pools if self.pool(name).needs_prepare]
        return out + self.doc_stages

    def add(
        self,
        paths: Iterable[str | Path],
        *,
        workers: int = 2,
        on_file: Callable[[FileResult], None] | None = None,
        on_pages: Callable[[int], None] | None = None,
    ) -> AddReport:
        """Index PDFs: skip finished ones, resume unfinished ones, report failures without stopping."""
        t0 = time.perf_counter()
        report = AddReport()
        files = expand_paths(paths)
        stages = self.stages()
        stage_names = ["ingest", *[n for n, _ in stages]]

        def finish(res: FileResult) -> None:
            report.files.append(res)
            if on_file:
                on_file(res)

        todo: list[tuple[Path, str]] = []
        with self.store.writer_lock():
            for path in files:
                try:
                    if not path.is_file():
                        raise IngestError(str(path), "no such file")
                    doc_id = content_hash(path)
                except OSError as e:
                    finish(FileResult(str(path), "failed", error=f"{path}: {e.strerror or e}"))
                    continue
                except IngestError as e:
                    finish(FileResult(str(path), "failed", error=str(e)))
                    continue
                entry = self.store.manifest.documents.get(doc_id)
                if entry and entry.done(stage_names):
                    finish(FileResult(str(path), "skipped", doc_id, entry.n_pages))
                    continue
                todo.append((path, doc_id))

            futures: dict[str, Future] = {}
            executor = ProcessPoolExecutor(max_workers=workers) if workers > 1 and len(todo) > 1 else None

            def submit_pending(start: int) -> None:
                for path, doc_id in todo[start:]:
                    entry = self.store.manifest.documents.get(doc_id)
                    if executor and not (entry and entry.stages.get("ingest")):
                        futures[doc_id] = executor.submit(_ingest_worker, str(path), doc_id, self.config.ocr)

            def parse(i: int, path: Path, doc_id: str) -> Document:
                """The parsed document; a worker that crashes (e.g. a MuPDF segfault) fails only its file."""
                nonlocal executor
                fut = futures.pop(doc_id, None)
                if fut is None:
                    return _ingest_worker(str(path), doc_id, self.config.ocr)
                try:
                    return fut.result()
                except BrokenProcessPool:
                    executor.shutdown(wait=False, cancel_futures=True)
                    executor = ProcessPoolExecutor(max_workers=1)  # retry alone to find the culprit
                    try:
                        return executor.submit(_ingest_worker, str(path), doc_id, self.config.ocr).result()
                    except BrokenProcessPool:
                        raise IngestError(str(path), "the PDF parser crashed on this file") from None
                    finally:
                        executor.shutdown(wait=False, cancel_futures=True)
                        executor = ProcessPoolExecutor(max_workers=workers)
                        futures.clear()
                        submit_pending(i + 1)

            submit_pending(0)
            try:
                for i, (path, doc_id) in enumerate(todo):
                    t1 = time.perf_counter()
                    entry = self.store.manifest.documents.get(doc_id)
                    resumed = bool(entry and entry.stages.get("ingest"))
                    try:
                        if resumed:
                            doc = self.store.document(doc_id)
                        else:
                            doc = parse(i, path, doc_id)
                            self.store.write_document(doc)
                        for name, fn in stages:
                            if not self.store.manifest.documents[doc_id].stages.get(name):
                                fn(doc)
                                self.store.mark(doc_id, name)
                    except IngestError as e:
                        finish(FileResult(str(path), "failed", doc_id, error=str(e)))
                        continue
                    except TridentError:
                        raise  # a configuration problem (missing model): stop, nothing is lost
                    except Exception as e:  # one bad document must not stop the batch
                        log.exception("indexing %s failed", path)
                        finish(FileResult(str(path), "failed", doc_id, error=f"{path}: {type(e).__name__}: {e}"))
                        continue
                    if on_pages:
                        on_pages(doc.n_pages)
                    finish(FileResult(str(path), "resumed" if resumed else "indexed", doc_id, doc.n_pages,
                                      time.perf_counter() - t1))
            finally:
                if executor:
                    executor.shutdown(wait=False, cancel_futures=True)
            self.build_pools()
        report.seconds = time.perf_counter() - t0
        return report

    def build_pools(self) -> list[str]:
        """Rebuild the global structures of stale pools; returns the names rebuilt."""
        rebuilt = []
        for name in self.config.pools:
            pool = self.pool(name)
            if pool.is_stale():
                pool.build()
                rebuilt.append(name)
        return rebuilt

    def remove(self, name: str) -> str:
        """Remove a document (by id, file name or stem) and rebuild the pools."""
        with self.store.writer_lock():
            doc_id = self.store.resolve(name)
            self.store.remove_document(doc_id)
            self._pools.clear()
            self.build_pools()
        return doc_id

    # -- search ----------------------------------------------------------------------------------------
    def search(
        self, query: str | Query, *, pool: str = "rrf", doc: str | Sequence[str] | None = None, k: int = 20
    ) -> list[Hit]:
        """Top-k pages for ``query`` from ``pool``, within ``doc`` (id/file name, or several) if given.

        Pass a :class:`~trident_local.query.Query` to keep what the pool learnt (its embedding, the
        xkg route) for the stages after it."""
        query = Query.of(query)
        if not query.text.strip():
            raise TridentError("the question is empty")
        if not self.store.doc_ids():
            raise TridentError(f"{self.store.root} holds no documents yet; add some with `trident index`")
        doc_ids = None
        if doc is not None:
            doc_ids = [self.resolve(d) for d in ([doc] if isinstance(doc, str) else doc)]
        return self.pool(pool).retrieve(query, k=k, doc_ids=doc_ids)
