"""The Python API: open or create an index, add PDFs (resumable), search it.

    index = Index.open("idx")
    hits = index.search("What was the revenue in 2020?", pool="fused", doc="report.pdf", k=5)

The index owns the model runtime (``index.models``): every stage that runs on
it takes its models from there, so each model is built once per process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from trident_local.config import Config, IndexOptions
from trident_local.docs.model import Document
from trident_local.docs.pdf_open import content_hash
from trident_local.docs.workers import ParserProcesses
from trident_local.errors import IngestError, StorageFull, TridentError
from trident_local.models.runtime import Models
from trident_local.query import Query
from trident_local.retrieve.base import Hit, Pool, get_pool
from trident_local.retrieve.stored import complete_stages
from trident_local.store.index_store import IndexStore
from trident_local.store.manifest import DocEntry
from trident_local.store.stages import Stage, StageRunner, guarded

if TYPE_CHECKING:
    from trident_kernels.ann_shards import MapFn
    from trident_local.docs.ingest import IngestControl

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
    first: dict[Path, Path] = {}
    for p in out:
        first.setdefault(p.resolve(), p)
    return list(first.values())


class Index:
    """An index directory with its pools. Cheap to open; pools load on first use."""

    def __init__(self, store: IndexStore, models: Models | None = None):
        self.store = store
        self.models = models if models is not None else Models(store.config)
        self._pools: dict[str, Pool] = {}
        self.doc_stages: list[Stage] = []
        self._warned_incomplete = False

    @classmethod
    def open(cls, root: str | Path, models: Models | None = None) -> Index:
        """Open an index; ``models``: a runtime to share (e.g. one per served index), else a new one."""
        return cls(IndexStore.open(root), models)

    @classmethod
    def create(cls, root: str | Path, config: Config | None = None) -> Index:
        return cls(IndexStore.open_or_create(root, config))

    @classmethod
    def for_indexing(cls, root: str | Path, options: IndexOptions | None = None) -> Index:
        """A new index with ``options``, or an existing one with ``options`` merged into its config."""
        options = options or IndexOptions()
        if not (Path(root) / "manifest.json").exists():
            return cls.create(root, options.apply(Config()))
        index = cls.open(root)
        merged = options.merge(index.config)
        if merged != index.config:
            with index.store.writer_lock():
                index.store.manifest.config = merged
                index.store.save_manifest()
        return index

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

    def incomplete(self) -> list[DocEntry]:
        """Documents a killed or failed run left with stages to do: pools do not cover them yet."""
        stages = complete_stages(self.store)
        return [e for e in self.store.entries() if not e.done(stages)]

    # -- indexing ------------------------------------------------------------------------------------
    def stages(self) -> list[Stage]:
        """Per-document stages after ingestion, in order: pools that prepare features, then extras."""
        pools = [Stage(n, self.pool(n).prepare) for n in self.config.pools if self.pool(n).needs_prepare]
        return pools + self.doc_stages

    def add(
        self,
        paths: Iterable[str | Path],
        *,
        workers: int = 2,
        on_file: Callable[[FileResult], None] | None = None,
        on_pages: Callable[[int], None] | None = None,
        control: IngestControl | None = None,
    ) -> AddReport:
        """Index PDFs: skip finished ones, resume unfinished ones, report failures without stopping.

        ``control`` (files parsed inline, ``workers <= 1``): stop between pages, per-page progress,
        an OCR page cap; a stop raises IngestCancelled and keeps nothing of the file being read."""
        t0 = time.perf_counter()
        report = AddReport()

        def finish(res: FileResult) -> None:
            report.files.append(res)
            if on_file:
                on_file(res)
            if on_pages and res.status in ("indexed", "resumed"):
                on_pages(res.pages)

        runner = StageRunner(self.store, self.stages())
        try:
            with self.store.writer_lock():
                todo = self.triage(expand_paths(paths), ["ingest", *runner.names], finish)
                with ParserProcesses(workers, self.config.ocr, close_fds=[self.store.lock_fd],
                                     control=control) as parser:
                    parser.queue([(p, d) for p, d in todo if not self._ingested(d)])
                    for path, doc_id in todo:
                        finish(self._index_one(path, doc_id, parser, runner))
                self.build_pools()
        except OSError as e:
            if StorageFull.caused(e):  # one line that says what ran out, where, and that a rerun resumes
                raise StorageFull(str(self.store.root)) from None
            raise
        report.seconds = time.perf_counter() - t0
        return report

    def _ingested(self, doc_id: str) -> bool:
        entry = self.store.manifest.documents.get(doc_id)
        return bool(entry and entry.stages.get("ingest"))

    def triage(self, files: list[Path], stage_names: list[str],
                finish: Callable[[FileResult], None]) -> list[tuple[Path, str]]:
        """(path, doc_id) of the files with work to do; unreadable and finished ones are reported."""
        todo = []
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
            else:
                todo.append((path, doc_id))
        return todo

    def _index_one(self, path: Path, doc_id: str, parser: ParserProcesses, runner: StageRunner) -> FileResult:
        """Ingest (or reload) one document and run its unfinished stages."""
        t1 = time.perf_counter()
        resumed = self._ingested(doc_id)

        def work() -> Document:
            if resumed:
                doc = self.store.document(doc_id)
            else:
                doc = parser.result(path, doc_id)
                self.store.write_document(doc)
            runner.run(doc)
            return doc

        doc, error = guarded(f"indexing {path}", work, prefix=f"{path}: ")
        if doc is None:
            return FileResult(str(path), "failed", doc_id, error=error)
        return FileResult(str(path), "resumed" if resumed else "indexed", doc_id, doc.n_pages,
                          time.perf_counter() - t1)

    def build_pools(self, *, map_fn: MapFn = map) -> list[str]:
        """Rebuild the global structures of stale pools under the writer lock; returns the names rebuilt.

        ``map_fn`` (like ``map``) runs the pools' independent per-shard work, e.g. as Ray tasks."""
        rebuilt = []
        with self.store.writer_lock():
            for name in self.config.pools:
                pool = self.pool(name)
                if pool.is_stale():
                    pool.build(map_fn=map_fn)
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
        self, query: str | Query, *, pool: str = "fused", doc: str | Sequence[str] | None = None, k: int = 20
    ) -> list[Hit]:
        """Top-k pages for ``query`` from ``pool``, within ``doc`` (id/file name, or several) if given.

        Reads only: never writes the index. Documents a killed run left unfinished
        are not searched (a warning names them; asking for one is an error). Pass a
        :class:`~trident_local.query.Query` to keep what the pool learnt (its embedding, the
        xkg route) for the stages after it.
        """
        query = Query.of(query)
        if not query.text.strip():
            raise TridentError("the question is empty")
        doc_ids = None if doc is None else [self.resolve(d) for d in ([doc] if isinstance(doc, str) else doc)]
        self._check_searchable(doc_ids)
        return self.pool(pool).retrieve(query, k=k, doc_ids=doc_ids)

    def _check_searchable(self, doc_ids: list[str] | None) -> None:
        """Refuse an empty index or an incomplete document asked for; warn (once) about the others."""
        if not self.store.doc_ids():
            raise TridentError(f"{self.store.root} holds no documents yet; add some with `trident index`")
        incomplete = {e.doc_id: e for e in self.incomplete()}
        asked = [incomplete[d] for d in doc_ids or [] if d in incomplete]
        if asked or len(incomplete) == len(self.store.doc_ids()):
            raise TridentError(_incomplete_message(self.store.root, asked or list(incomplete.values())))
        if incomplete and doc_ids is None and not self._warned_incomplete:
            self._warned_incomplete = True
            log.warning("%s; searching the other documents",
                        _incomplete_message(self.store.root, list(incomplete.values())))


def _incomplete_message(root: Path, entries: list[DocEntry]) -> str:
    names = ", ".join(e.file_name for e in entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
    return (f"{len(entries)} document(s) of {root} are not completely indexed ({names}): "
            f"re-run `trident index` on {root} to finish them")
