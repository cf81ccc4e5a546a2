"""The index directory and everything written into it.

Layout::

    INDEX/manifest.json              schema version, config, documents, pools
    INDEX/docs/<doc_id>/document.json  the ingested Document
    INDEX/docs/<doc_id>/<stage>.*      per-document features (embeddings, annotations)
    INDEX/docs/<doc_id>/pages/         rendered page images (lazy cache)
    INDEX/pools/<name>@<fingerprint>/  global pool structures (see retrieve/stored.py)

Every write is atomic and the manifest is rewritten after each finished stage of
each document, so a killed run leaves a valid index and a re-run resumes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from trident_local.atomic import atomic_write_json, read_json
from trident_local.config import Config
from trident_local.docs.model import Document
from trident_local.errors import IndexError_, TridentError, WriterBusy
from trident_local.store.manifest import SCHEMA_VERSION, DocEntry, Manifest

MANIFEST = "manifest.json"


class IndexStore:
    """Read and write one index directory."""

    def __init__(self, root: Path, manifest: Manifest):
        self.root = Path(root)
        self.manifest = manifest
        self._lock_depth = 0
        self.lock_fd: int | None = None  # the writer lock's descriptor while held: child processes must close it
        self._load_document = lru_cache(maxsize=64)(self._read_document)

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def open(cls, root: str | Path) -> IndexStore:
        root = Path(root)
        path = root / MANIFEST
        if not path.exists():
            raise IndexError_(f"no index at {root} (no {MANIFEST}); create one with `trident index PDFS --index {root}`")
        try:
            data = read_json(path)
        except ValueError as e:
            raise IndexError_(f"{path} is not valid JSON ({e})") from e
        if data.get("schema_version") != SCHEMA_VERSION:
            raise IndexError_(
                f"{root} has index schema {data.get('schema_version')}, this version reads {SCHEMA_VERSION}; re-index"
            )
        return cls(root, Manifest.from_dict(data))

    @classmethod
    def create(cls, root: str | Path, config: Config | None = None) -> IndexStore:
        root = Path(root)
        if (root / MANIFEST).exists():
            return cls.open(root)
        if root.exists() and any(root.iterdir()):
            raise IndexError_(f"{root} exists, is not empty and is not an index; pick another --index directory")
        root.mkdir(parents=True, exist_ok=True)
        store = cls(root, Manifest(config=config or Config()))
        store.save_manifest()
        return store

    @classmethod
    def open_or_create(cls, root: str | Path, config: Config | None = None) -> IndexStore:
        return cls.open(root) if (Path(root) / MANIFEST).exists() else cls.create(root, config)

    @contextmanager
    def writer_lock(self) -> Iterator[None]:
        """Exclusive lock so two writers never write the same index at once.

        An flock on ``.lock``, released by the kernel when the holder's descriptor
        closes, so a killed writer never leaves it behind (its forked parse workers
        close their copy, see ``lock_fd``). The file holds the writer's pid
        for the message of the writer that is refused. Re-entrant within one store object.
        """
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / ".lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise WriterBusy(f"another process{_holder(fd)} is writing {self.root}; "
                                 "wait for it to finish") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            if (self.root / MANIFEST).exists():  # what the previous writer committed, not what was read at open
                self.manifest = IndexStore.open(self.root).manifest
            self._lock_depth, self.lock_fd = 1, fd
            yield
        finally:
            self._lock_depth, self.lock_fd = 0, None
            os.close(fd)

    # -- manifest ------------------------------------------------------------------------------
    @property
    def config(self) -> Config:
        return self.manifest.config

    def save_manifest(self) -> None:
        atomic_write_json(self.root / MANIFEST, self.manifest.to_dict())

    def doc_dir(self, doc_id: str) -> Path:
        return self.root / "docs" / doc_id

    def pool_dir(self, name: str) -> Path:
        return self.root / "pools" / name

    def entries(self, stages: list[str] | None = None) -> list[DocEntry]:
        """Documents in the order they were added; with ``stages``, only those that finished them."""
        docs = sorted(self.manifest.documents.values(), key=lambda e: (e.added, e.doc_id))
        return [d for d in docs if stages is None or d.done(stages)]

    def doc_ids(self, stages: list[str] | None = None) -> list[str]:
        return [e.doc_id for e in self.entries(stages if stages is not None else ["ingest"])]

    def mark(self, doc_id: str, stage: str, done: bool = True) -> None:
        self.manifest.documents[doc_id].stages[stage] = done
        self.save_manifest()

    def fingerprint(self, doc_ids: list[str], *extra: str) -> str:
        h = hashlib.sha256("\n".join([*doc_ids, *extra]).encode())
        return h.hexdigest()[:16]

    # -- documents -----------------------------------------------------------------------------
    def write_document(self, doc: Document) -> None:
        """Write the document data, then register it (so a kill between the two leaves no half entry)."""
        atomic_write_json(self.doc_dir(doc.doc_id) / "document.json", doc.to_dict())
        entry = self.manifest.documents.get(doc.doc_id)
        if entry is None:
            entry = DocEntry(doc_id=doc.doc_id, file_name=doc.file_name, path=doc.path, n_pages=doc.n_pages)
            self.manifest.documents[doc.doc_id] = entry
        entry.warnings = list(doc.warnings)
        entry.stages["ingest"] = True
        self.save_manifest()
        self._load_document.cache_clear()

    def _read_document(self, doc_id: str) -> Document:
        path = self.doc_dir(doc_id) / "document.json"
        if not path.exists():
            raise IndexError_(f"document {doc_id} is listed in the manifest but {path} is missing; re-run `trident index`")
        return Document.from_dict(read_json(path))

    def document(self, doc_id: str) -> Document:
        if doc_id not in self.manifest.documents:
            raise TridentError(f"no document {doc_id!r} in {self.root}")
        return self._load_document(doc_id)

    def remove_document(self, doc_id: str) -> None:
        import shutil

        self.manifest.documents.pop(doc_id, None)
        self.save_manifest()
        shutil.rmtree(self.doc_dir(doc_id), ignore_errors=True)
        self._load_document.cache_clear()

    def resolve(self, name: str) -> str:
        """A doc_id from a doc_id, a unique doc_id prefix, a file name, or a file stem."""
        docs = self.manifest.documents
        if name in docs:
            return name
        by_name = [e.doc_id for e in docs.values() if name in (e.file_name, Path(e.file_name).stem)]
        if len(by_name) == 1:
            return by_name[0]
        by_prefix = [d for d in docs if len(name) >= 4 and d.startswith(name)]
        if len(by_name) > 1 or len(by_prefix) > 1:
            raise TridentError(f"{name!r} matches several documents; use the doc_id (see `trident docs`)")
        if len(by_prefix) == 1:
            return by_prefix[0]
        raise TridentError(f"no document {name!r} in {self.root} (try `trident docs --index {self.root}`)")

    def page_image(self, doc_id: str, page: int, dpi: int | None = None, *, render: bool = True) -> Path:
        """Path of the page's PNG, rendered on first use (``render=False``: the path it has or will have)."""
        entry = self.manifest.documents[doc_id]
        try:
            doc: Document | None = self.document(doc_id) if entry.stages.get("ingest") else None
        except (TridentError, OSError, ValueError):
            doc = None
        return self._render(doc_id, entry.path, entry.n_pages, entry.file_name, page, dpi, doc, render)

    def document_page_image(self, doc: Document, page: int, dpi: int | None = None) -> Path:
        """:meth:`page_image` for a document the manifest may not hold yet (a Ray actor annotating a
        document before the driver registers it): rendered from the document's own path."""
        return self._render(doc.doc_id, doc.path, doc.n_pages, doc.file_name, page, dpi, doc, True)

    def _render(self, doc_id: str, path: str, n_pages: int, name: str, page: int, dpi: int | None,
                doc: Document | None, render: bool) -> Path:
        from trident_local.docs.render import render_dpi, render_page

        dpi = dpi or self.config.dpi
        if not 1 <= page <= n_pages:
            raise TridentError(f"{name} has pages 1..{n_pages}, not {page}")
        if doc is not None and page <= len(doc.pages):  # named by the dpi it is drawn at: a capped scale is kept once
            p = doc.pages[page - 1]
            dpi = render_dpi(p.width, p.height, dpi)
        out = self.doc_dir(doc_id) / "pages" / f"p{page:04d}@{dpi}.png"
        return render_page(path, page, out, dpi=dpi) if render else out


def _holder(fd: int) -> str:
    """" (pid N)" from the lock file, saying when that process is gone (a descendant holds the lock)."""
    try:
        pid = int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return ""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f" (started by pid {pid}, which has exited; one of its child processes still holds the lock)"
    except PermissionError:
        pass
    return f" (pid {pid})"
