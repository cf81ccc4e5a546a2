"""The one place where the service calls the library: indexes, documents, search, ask, verify, trace.

Readers and writers of an index directory are kept apart in this process:

* every request reads through a *snapshot*: an ``Index`` opened right after the last
  write finished, whose manifest in memory matches the pool structures on disk;
* a job ingests a file outside any lock (its own ``Index`` instance, its own manifest),
  and takes the exclusive lock only while the pools are rebuilt and the new snapshot is
  opened. So asks keep working while a job indexes and never see a half-written index.
"""

from __future__ import annotations

import re
import shutil
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_local.config import Config
from trident_local.errors import TridentError, WriterBusy
from trident_local.index import FileResult, Index
from trident_local.models.runtime import ModelCache, Models
from trident_local.serve.page_cache import MB, PageCache
from trident_local.store.index_store import MANIFEST

if TYPE_CHECKING:
    from trident_kernels.ann_shards import MapFn
    from trident_local.docs.ingest import IngestControl
    from trident_local.generate.ask import AskOptions

AUTO_QUOTA_MB_PER_PAGE = 1.0  # page images kept per indexed page when no quota is set (a scale-1 page is ~0.3 MB)
AUTO_QUOTA_MIN_MB = 64.0
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def public_doc(entry: dict[str, Any]) -> dict[str, Any]:
    """A document as the API shows it: no server path."""
    return {k: v for k, v in entry.items() if k != "path"}


def ensure_index(path: str | Path) -> None:
    """Open the index at ``path``, or create an empty one there (with the default config)."""
    Index.create(path)


class NotFound(TridentError):
    """An unknown index, document, page or job (HTTP 404)."""


class Ambiguous(TridentError):
    """A document name several documents answer to (HTTP 409): name it by its id."""


class Busy(TridentError):
    """The index is being written by another process or job (HTTP 409)."""


class RWLock:
    """Many readers or one writer; a waiting writer blocks new readers so it is never starved."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class _Pooled(Index):
    """An Index whose pool rebuild happens under the handle's write lock, then publishes a new snapshot."""

    handle: IndexHandle

    def build_pools(self, *, map_fn: MapFn = map) -> list[str]:
        with self.handle.lock.write():
            rebuilt = super().build_pools(map_fn=map_fn)
            self.handle.publish()
        return rebuilt


class IndexHandle:
    """One served index: its directory, its lock and its current read snapshot."""

    def __init__(self, name: str, path: Path, chat: str = "", cache: ModelCache | None = None,
                 image_quota_mb: float = 0.0):
        self.name, self.path = name, path
        self.lock = RWLock()
        self.snapshot = Index.open(path)
        self.image_quota_mb = image_quota_mb
        self.images = PageCache(path, self._image_quota)
        # One runtime per served index, every request of it shares its models; the built models
        # themselves live in the service's cache, so indexes with the same chat profile share one engine.
        self.models = Models(self.snapshot.config, cache=cache)
        self.snapshot.models = self.models
        if chat:
            self.models.use_profile("chat", chat)
        self.generation = 0

    def _image_quota(self) -> int:
        """Bytes of page images kept: the setting, else sized for the index (per page, with a floor)."""
        if self.image_quota_mb > 0:
            return int(self.image_quota_mb * MB)
        pages = sum(e.n_pages for e in self.snapshot.store.manifest.documents.values())
        return int(max(AUTO_QUOTA_MIN_MB, AUTO_QUOTA_MB_PER_PAGE * pages) * MB)

    def publish(self) -> None:
        """A new read snapshot (call under the write lock); it keeps the shared runtime."""
        self.snapshot = Index.open(self.path, self.models)
        self.generation += 1

    def writer(self) -> _Pooled:
        idx = _Pooled.open(self.path, self.models)
        idx.handle = self
        return idx


class Engine:
    """The served indexes and the library calls the API makes on them."""

    def __init__(self, indexes: dict[str, str], data_dir: str = "", chat: str = "",
                 cache: ModelCache | None = None, image_quota_mb: float = 0.0):
        self.chat = chat  # overrides each index's chat profile when set
        self.image_quota_mb = image_quota_mb
        self.data_dir = Path(data_dir) if data_dir else None
        self.cache = cache if cache is not None else ModelCache()  # the process's engines, shared by indexes
        self.handles: dict[str, IndexHandle] = {}
        for name, path in {**indexes, **self._stored(indexes)}.items():
            self.handles[name] = IndexHandle(name, Path(path), chat, self.cache, image_quota_mb)

    def _stored(self, named: dict[str, str]) -> dict[str, str]:
        """The indexes under ``data_dir`` (those ``POST /api/indexes`` made) not already ``named``: a
        restart serves them again, with the keys scoped to them."""
        if self.data_dir is None or not self.data_dir.is_dir():
            return {}
        taken = {Path(p).resolve() for p in named.values()}
        found = {}
        for d in sorted(self.data_dir.iterdir()):
            if (d / MANIFEST).is_file() and NAME_RE.fullmatch(d.name) and d.name not in named \
                    and d.resolve() not in taken:
                found[d.name] = str(d)
        return found

    # -- indexes -------------------------------------------------------------------------------------
    def handle(self, name: str) -> IndexHandle:
        if name not in self.handles:
            raise NotFound(f"no index {name!r}; indexes: {', '.join(self.handles) or '(none)'}")
        return self.handles[name]

    @contextmanager
    def reading(self, name: str) -> Iterator[Index]:
        h = self.handle(name)
        with self.scrubbed(), h.lock.read():
            yield h.snapshot

    def scrub(self, message: str) -> str:
        """``message`` with the server's directories named as the client knows them (D10: a
        client learns nothing of the file system's layout from an error)."""
        roots = [(str(h.path.resolve()), f"index '{n}'") for n, h in self.handles.items()]
        roots += [(str(h.path), f"index '{n}'") for n, h in self.handles.items()]
        if self.data_dir is not None:
            roots += [(str(self.data_dir.resolve()), "the data folder"), (str(self.data_dir), "the data folder")]
        for path, label in sorted(roots, key=lambda r: -len(r[0])):
            message = message.replace(path, label)
        return message

    @contextmanager
    def scrubbed(self) -> Iterator[None]:
        """Re-raise a TridentError with :meth:`scrub`'s message, keeping its HTTP meaning."""
        try:
            yield
        except TridentError as e:
            cls = next((c for c in (NotFound, Busy, Ambiguous) if isinstance(e, c)), TridentError)
            text = self.scrub(str(e))
            if text == str(e) and cls is type(e):
                raise
            raise cls(text) from None

    def create_index(self, name: str, config: dict[str, Any] | None = None) -> IndexHandle:
        if self.data_dir is None:
            raise TridentError("creating indexes is off: start the service with a data_dir")
        if not NAME_RE.fullmatch(name or ""):
            raise TridentError("an index name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        if name in self.handles:
            raise Busy(f"index {name!r} exists")
        try:
            cfg = Config.from_dict(config or {})
        except TypeError as e:
            raise TridentError(f"bad index config: {e}") from e
        path = self.data_dir / name
        fresh = not path.exists()
        try:
            Index.create(path, cfg)
            self.handles[name] = IndexHandle(name, path, self.chat, self.cache, self.image_quota_mb)
        except BaseException:  # a failed write (a full disk) leaves no half-made index behind
            if fresh:
                shutil.rmtree(path, ignore_errors=True)
            raise
        return self.handles[name]

    def index_info(self, name: str) -> dict[str, Any]:
        with self.reading(name) as idx:
            m = idx.store.manifest
            return {
                "name": name,
                "config": idx.config.to_dict(),
                "documents": len(idx.store.doc_ids()),
                "pages": sum(e.n_pages for e in m.documents.values()),
                "pools": {p: {"fresh": not idx.pool(p).is_stale()} for p in idx.config.pools},
                "generation": self.handles[name].generation,
            }

    # -- documents -----------------------------------------------------------------------------------
    def documents(self, name: str) -> list[dict[str, Any]]:
        """The manifest entries, ``path`` included (for jobs; the API drops it: :func:`public_doc`)."""
        with self.reading(name) as idx:
            return [asdict(e) for e in idx.store.entries(stages=[])]

    def document(self, name: str, doc: str) -> dict[str, Any]:
        with self.reading(name) as idx:
            doc_id = self._resolve(idx, doc)
            entry = idx.store.manifest.documents[doc_id]
            d = idx.store.document(doc_id) if entry.stages.get("ingest") else None
            out = asdict(entry)
            if d is not None:
                out.update(title=d.title, toc=[asdict(t) for t in d.toc],
                           pages=[{"number": p.number, "section": p.section, "ocr": p.ocr,
                                   "image_only": p.image_only, "objects": len(p.objects)} for p in d.pages])
            return out

    def doc_ids(self, name: str) -> set[str]:
        with self.reading(name) as idx:
            return set(idx.store.manifest.documents)

    def remove(self, name: str, doc: str) -> str:
        h = self.handle(name)
        with self.scrubbed(), h.lock.read():
            doc_id = self._resolve(h.snapshot, doc)
        try:
            h.writer().remove(doc_id)  # rebuilds the pools through _Pooled.build_pools
        except WriterBusy as e:
            raise Busy(f"{name} is being indexed; delete the document when the job is done") from e
        with h.lock.write():  # no request is drawing a page now, and later ones no longer find the document
            shutil.rmtree(h.snapshot.store.doc_dir(doc_id), ignore_errors=True)  # what a render raced in
            h.images.forget(doc_id)
        return doc_id

    @staticmethod
    def _resolve(idx: Index, doc: str) -> str:
        """A document id from an id, prefix, file name or stem; a name is matched in NFC as uploads store it
        (404 when none matches, 409 when several do: the client must name it by id)."""
        try:
            return idx.resolve(doc)
        except TridentError as e:
            nfc = unicodedata.normalize("NFC", doc)
            if nfc != doc:
                with suppress(TridentError):
                    return idx.resolve(nfc)
            raise (Ambiguous if "matches several documents" in str(e) else NotFound)(str(e)) from e

    # -- background work (called by jobs, in a worker thread) ---------------------------------------
    def index_file(self, name: str, path: str, control: IngestControl | None = None) -> FileResult:
        """Index one PDF (resumes its unfinished stages); the pools are rebuilt and published at the end.

        ``control``: the job's cancel check, page progress and OCR cap (the file is parsed inline)."""
        from trident_local.annotate import annotation_stage

        idx = self.handle(name).writer()
        idx.doc_stages.append(annotation_stage(idx, self.chat or None))  # the annotated rerank needs it; no-model by default
        try:
            rep = idx.add([path], workers=1, control=control)
        except WriterBusy as e:
            raise Busy(str(e)) from e
        return rep.files[0]

    def annotate_doc(self, name: str, doc_id: str) -> tuple[int, str]:
        """Annotate one document with the index's chat profile; returns (pages, error or '')."""
        from trident_local.annotate import annotate_index

        idx = self.handle(name).writer()
        try:
            rep = annotate_index(idx, profile=self.chat or None, docs=[doc_id])  # takes the index's writer lock itself
        except WriterBusy as e:
            raise Busy(str(e)) from e
        if "xkg" in idx.config.pools:
            idx.build_pools()
        else:
            with idx.handle.lock.write():
                idx.handle.publish()
        err = "; ".join(e for d, e in rep.failed if d == doc_id)
        return rep.pages, err

    def pending_paths(self, name: str, paths: list[str]) -> list[tuple[str, str]]:
        """(path, doc_id) of the PDFs among ``paths`` (files or folders) not yet in the index."""
        from trident_local.docs.pdf_open import content_hash
        from trident_local.index import expand_paths

        with self.reading(name) as idx:
            known = idx.store.manifest.documents
            out = []
            for p in expand_paths(paths):
                doc_id = content_hash(p)
                if doc_id not in known or not known[doc_id].stages.get("annotate"):
                    out.append((str(p), doc_id))
            return out

    @staticmethod
    def check_pdf(path: str | Path) -> tuple[int, str]:
        """(pages, "") for a PDF the indexer can open, else (0, why not): corrupt, encrypted, no pages, ..."""
        from trident_local.docs.pdf_open import open_pdf
        from trident_local.errors import IngestError

        try:
            with open_pdf(path) as pdf:
                return pdf.page_count, ""
        except IngestError as e:  # MuPDF's text names the file: not the server's path, please
            return 0, e.reason.replace(str(path), Path(path).name)

    def page_count(self, path: str) -> int:
        return self.check_pdf(path)[0]

    # -- queries -------------------------------------------------------------------------------------
    def search(self, name: str, question: str, *, docs: list[str] | None, pool: str, k: int,
               finders: str = "all") -> list[dict]:
        """The evidence pipeline's pages (:func:`trident_local.search.search`), as `trident search --json`."""
        from trident_local.search import search

        with self.reading(name) as idx:
            doc_ids = [self._resolve(idx, d) for d in docs] if docs else None
            return [found.to_dict() for found in search(idx, question, pool=pool, doc=doc_ids, k=k, finders=finders)]

    def ask(self, name: str, question: str, options: AskOptions, *, docs: list[str] | None,
            min_confidence: float | None = None) -> dict[str, Any]:
        """The CLI's ``ask --json`` result plus ``evidence``: the boxes to highlight on each cited page."""
        from trident_local.generate.ask import ask
        from trident_local.query import Query

        with self.reading(name) as idx:
            doc_ids = [self._resolve(idx, d) for d in docs] if docs else None
            profile = idx.models.profile_name("chat")
            res = ask(idx, Query(question, min_confidence=min_confidence), options, doc=doc_ids)
            out = res.to_dict()
            a = res.answer
            out["evidence"] = [
                self._region_boxes(idx, c) if c.regions else
                self._boxes(idx, c.doc_id, c.page,
                            a.support if a.support and a.support_page == c.page else f"{a.text} {question}")
                for c in a.citations
            ]
            out["produced_by"] = {
                "retrieval": f"{res.pool} pool",
                "rerank": res.rerank.get("mode", "none") + (" (fell back to pool order)"
                                                            if res.rerank.get("fallback") else ""),
                "answer": a.mode,
                "chat_profile": profile,
            }
            return out

    def verify(self, name: str, answer: str | dict, doc: str, *, window: int) -> dict[str, Any]:
        from trident_local.verify.pipeline import Verifier

        with self.reading(name) as idx:
            doc_id = self._resolve(idx, doc)
            report = Verifier.from_index(idx, text=self.chat or None, window=window).verify(answer, doc_id)
            return report.to_dict()

    def trace(self, name: str, question: str, *, answer_format: str, choices: list[str],
              papers: list[str] | None) -> dict[str, Any]:
        from trident_local.trace import Tracer

        with self.reading(name) as idx:
            tracer = Tracer(idx, idx.models.chat)
            return tracer.trace(question, answer_format, choices, papers=papers or None).to_dict()

    def page_png(self, name: str, doc: str, page: int, scale: int = 1, *, render: bool = True) -> Path | None:
        """The rendered page at ``scale`` times the index's DPI (rendered once, then kept within the
        index's image quota); ``render=False``: the kept image, or None when it needs drawing."""
        h = self.handle(name)
        with self.reading(name) as idx:
            doc_id = self._resolve(idx, doc)
            n = idx.store.manifest.documents[doc_id].n_pages
            if not 1 <= page <= n:
                raise NotFound(f"{doc_id} has pages 1..{n}, not {page}")
            dpi = idx.store.config.dpi * scale if scale > 1 else None
            path = idx.store.page_image(doc_id, page, dpi=dpi, render=False)
            if h.images.hit(path):
                return path
            if not render:
                return None
            path = idx.store.page_image(doc_id, page, dpi=dpi)
            h.images.add(path)
            return path

    def page_boxes(self, name: str, doc: str, page: int, text: str) -> dict[str, Any]:
        with self.reading(name) as idx:
            doc_id = self._resolve(idx, doc)
            n = idx.store.manifest.documents[doc_id].n_pages
            if not 1 <= page <= n:
                raise NotFound(f"{doc_id} has pages 1..{n}, not {page}")
            return self._boxes(idx, doc_id, page, text)

    @staticmethod
    def _region_boxes(idx: Index, c: Any) -> dict[str, Any]:
        """The citation's regions as the page view's boxes: the cell, its row and column headers."""
        p = idx.store.document(c.doc_id).page(c.page)
        boxes = [{"kind": r["kind"], "label": r["kind"], "bbox": r["bbox"], "text": r["text"][:300]}
                 for r in c.regions]
        return {"doc_id": c.doc_id, "page": c.page, "width": p.width, "height": p.height, "boxes": boxes}

    @staticmethod
    def _boxes(idx: Index, doc_id: str, page: int, text: str, top: int = 3) -> dict[str, Any]:
        """The page's text blocks and objects that share the most words with ``text`` (PDF points)."""
        p = idx.store.document(doc_id).page(page)
        want = set(re.findall(r"\w{3,}", text.lower()))

        def score(s: str) -> float:
            got = set(re.findall(r"\w{3,}", s.lower()))
            return len(want & got) / (len(got) ** 0.5 or 1.0)

        def titled(label: str, caption: str) -> str:  # once: captions often repeat it ("Table 1: ...")
            return (caption if label and caption.startswith(label) else f"{label} {caption}").strip()

        cands = [{"kind": "text", "label": "", "bbox": list(b.bbox), "score": score(b.text),
                  "text": b.text.strip()[:300]} for b in p.blocks or p.ocr_blocks]
        cands += [{"kind": o.type, "label": o.label or o.object_id, "bbox": list(o.bbox),
                   "score": score(f"{o.label} {o.caption} {o.text}"),
                   "text": (titled(o.label, o.caption) or o.text.strip())[:300]} for o in p.objects]
        best = sorted((c for c in cands if c["score"] > 0), key=lambda c: -c["score"])[:top]
        return {"doc_id": doc_id, "page": page, "width": p.width, "height": p.height, "boxes": best}
