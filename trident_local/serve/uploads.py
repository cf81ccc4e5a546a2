"""PDF uploads: multipart streamed to disk inside the index directory, checked, de-duplicated by SHA-256.

The request body is parsed as it arrives (python-multipart's push parser), so a file
is never held in memory and a size limit stops the write at the limit. Partial files
live in ``INDEX/uploads/.partial/`` and are removed on any failure and at start-up
(a killed server leaves only them behind). A kept file is
``INDEX/uploads/<doc_id>/<safe name>``: the directory is the content hash and the name
is reduced to one harmless path component, so no client name can escape the index.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import unicodedata
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request

from trident_local.errors import StorageFull

UPLOADS = "uploads"
PARTIAL = ".partial"


class UploadError(Exception):
    """The whole request is unusable (not multipart, too large, client gone)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class StoredUpload:
    """One file of an upload request, kept (``path``) or rejected (``error``)."""

    name: str  # the client's name, made safe
    size: int = 0
    doc_id: str = ""  # first 16 hex digits of SHA-256, as the index's doc_id
    path: str = ""
    status: str = "stored"  # stored | duplicate | rejected
    error: str = ""
    http_status: int = 0  # for rejected files: 413 too large, 415 not a PDF, 422 unreadable
    pages: int = 0

    def public(self) -> dict:
        """What a client is told: the stored file relative to the index, never a server path."""
        d = {k: v for k, v in self.__dict__.items() if k != "path"}
        d["stored_as"] = f"{UPLOADS}/{self.doc_id}/{Path(self.path).name}" if self.path else ""
        return d


def safe_name(raw: str) -> str:
    """One path component: no directories, control characters or NULs; NFC unicode; ends in .pdf."""
    name = unicodedata.normalize("NFC", raw or "")
    name = name.replace("\\", "/").split("/")[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = re.sub(r"\s+", " ", name).strip(" .")
    stem = name[:-4] if name.lower().endswith(".pdf") else name
    stem = stem[:120].strip(" .") or "upload"
    return stem + ".pdf"


def uploads_dir(index_root: Path) -> Path:
    return index_root / UPLOADS


def clean_partials(index_root: Path) -> int:
    """Remove what a killed upload left behind; returns how many files."""
    d = uploads_dir(index_root) / PARTIAL
    if not d.is_dir():
        return 0
    n = 0
    for p in d.iterdir():
        p.unlink(missing_ok=True)
        n += 1
    return n


class _Sink:
    """Receives the parser's callbacks and writes each file part to its own partial file."""

    def __init__(self, partial_dir: Path, max_file: int):
        self.partial_dir, self.max_file = partial_dir, max_file
        self.files: list[tuple[StoredUpload, Path, str]] = []  # (record, partial path, sha256 hex)
        self._header_field = b""
        self._headers: dict[bytes, bytes] = {}
        self._fh: IO[bytes] | None = None
        self._hash = hashlib.sha256()
        self._current: StoredUpload | None = None
        self._path: Path | None = None
        self.other_fields = 0

    def on_part_begin(self) -> None:
        self._headers = {}

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        key = self._header_field.lower()
        self._headers[key] = self._headers.get(key, b"") + data[start:end]

    def on_header_end(self) -> None:
        self._header_field = b""

    def on_headers_finished(self) -> None:
        _, opts = parse_options_header(self._headers.get(b"content-disposition", b""))
        field_name = opts.get(b"name", b"").decode("utf-8", "replace")
        if field_name != "file" or b"filename" not in opts:
            self._current = None
            self.other_fields += 1
            return
        raw = opts[b"filename"].decode("utf-8", "replace")
        self._current = StoredUpload(safe_name(raw))
        self._path = self.partial_dir / f"{uuid.uuid4().hex}.part"
        # private like every other index file (0600), whatever the umask; closed in on_part_end / abort
        self._fh = os.fdopen(os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")
        self._hash = hashlib.sha256()

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        rec = self._current
        if rec is None or self._fh is None:
            return
        n = end - start
        rec.size += n
        if rec.size > self.max_file:
            if rec.status != "rejected":
                rec.status, rec.http_status = "rejected", 413
                rec.error = f"file is larger than the limit of {self.max_file / 1024**2:.0f} MB"
                self._fh.truncate(0)
            return  # keep reading the stream, stop writing
        self._fh.write(data[start:end])
        self._hash.update(data[start:end])

    def on_part_end(self) -> None:
        if self._current is not None and self._fh is not None:
            self._fh.close()
            self.files.append((self._current, self._path, self._hash.hexdigest()))
        self._current, self._fh = None, None

    def abort(self) -> None:
        if self._fh is not None:
            self._fh.close()
        for _, p, _ in self.files:
            p.unlink(missing_ok=True)
        if self._path is not None:
            self._path.unlink(missing_ok=True)


Checker = Callable[[Path], tuple[int, str]]  # a PDF -> (pages, "") or (0, why it cannot be indexed)


async def receive_pdfs(request: Request, index_root: Path, *, max_file: int, max_request: int,
                       known: Callable[[], set[str]], check: Checker,
                       commit: Callable[[list[StoredUpload]], None] = lambda stored: None,
                       lock: AbstractContextManager[Any] | None = None) -> list[StoredUpload]:
    """Stream the multipart body's ``file`` parts to disk, then check and keep each PDF.

    ``known()``: doc_ids in the index or in a job still to run (reported as duplicates, not
    stored twice); called after the body is read, with no await until the caller has queued
    its job, so two uploads of one file cannot both be stored. A stored file that is not known
    (its job was cancelled or failed, or a crash came between) is replaced and indexed again.
    ``check``: opens a PDF the way the indexer will (run in a thread: a repair can be slow).
    ``commit``: queues the stored files; run with ``known()`` and the moves under ``lock`` (the job
    table's), so a job that ends meanwhile cannot remove a file it no longer owns (a re-upload of the
    file it was asked to cancel) before the new job claims it.
    """
    ctype, opts = parse_options_header(request.headers.get("content-type", ""))
    if ctype != b"multipart/form-data" or b"boundary" not in opts:
        raise UploadError(415, "send the PDFs as multipart/form-data in the field 'file'")
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > max_request:
        raise UploadError(413, f"request is larger than the limit of {max_request / 1024**2:.0f} MB")
    partial_dir = uploads_dir(index_root) / PARTIAL
    partial_dir.mkdir(parents=True, exist_ok=True)
    sink = _Sink(partial_dir, max_file)
    parser = MultipartParser(opts[b"boundary"], {
        "on_part_begin": sink.on_part_begin, "on_header_field": sink.on_header_field,
        "on_header_value": sink.on_header_value, "on_header_end": sink.on_header_end,
        "on_headers_finished": sink.on_headers_finished, "on_part_data": sink.on_part_data,
        "on_part_end": sink.on_part_end,
    })
    total = 0
    try:
        async for chunk in request.stream():
            total += len(chunk)
            if total > max_request:
                raise UploadError(413, f"request is larger than the limit of {max_request / 1024**2:.0f} MB")
            parser.write(chunk)
        parser.finalize()
    except ClientDisconnect:
        sink.abort()
        raise UploadError(400, "the client disconnected during the upload; nothing was kept") from None
    except UploadError:
        sink.abort()
        raise
    except OSError as e:
        sink.abort()
        if StorageFull.caused(e):  # the index volume filled up while the body was written: a 507
            raise StorageFull(f"the index's {UPLOADS} folder", "receiving an upload",
                              "retry: nothing of this upload was kept") from None
        raise
    except Exception as e:  # python-multipart raises its own errors on a malformed body
        sink.abort()
        raise UploadError(400, f"malformed multipart body ({type(e).__name__}: {e})") from None
    if not sink.files:
        sink.abort()
        raise UploadError(422, "no file in the request: send PDFs in the multipart field 'file'")
    checked = [await run_in_threadpool(_check, rec, part, check) for rec, part, _ in sink.files]
    with lock or nullcontext():  # no await from here until the stored files are queued
        ids = known()
        stored = [_keep(rec, part, sha, index_root, ids, ok)
                  for (rec, part, sha), ok in zip(sink.files, checked, strict=True)]
        commit(stored)
    return stored


def _check(rec: StoredUpload, part: Path, check: Checker) -> bool:
    """True when the part is a PDF the indexer can open; else ``rec`` says why not."""
    if rec.status == "rejected":
        return False
    if rec.size == 0:
        return not _reject(rec, 422, "empty file (0 bytes)")
    with open(part, "rb") as f:
        head = f.read(1024)
    if b"%PDF-" not in head:
        return not _reject(rec, 415, "not a PDF (no %PDF- header)")
    pages, why = check(part)
    if why:
        return not _reject(rec, 422, why)
    rec.pages = pages
    return True


def _keep(rec: StoredUpload, part: Path, sha: str, index_root: Path, known: set[str], ok: bool) -> StoredUpload:
    try:
        if not ok:
            return rec
        rec.doc_id = sha[:16]
        final_dir = uploads_dir(index_root) / rec.doc_id
        existing = sorted(final_dir.glob("*.pdf")) if final_dir.is_dir() else []
        if rec.doc_id in known:
            rec.status = "duplicate"
            rec.path = str(existing[0]) if existing else ""
            return rec
        if existing:  # an orphan: kept by a job that was cancelled, failed or cut by a crash
            shutil.rmtree(final_dir, ignore_errors=True)
        final_dir.mkdir(parents=True, exist_ok=True)
        final = final_dir / rec.name
        if not final.resolve().is_relative_to(uploads_dir(index_root).resolve()):
            return _reject(rec, 400, "file name not allowed")
        os.replace(part, final)
        os.chmod(final, 0o600)
        rec.path = str(final)
        known.add(rec.doc_id)  # the same bytes twice in one request: the second is a duplicate
        return rec
    finally:
        part.unlink(missing_ok=True)


def _reject(rec: StoredUpload, status: int, reason: str) -> StoredUpload:
    rec.status, rec.http_status, rec.error = "rejected", status, reason
    return rec


def remove_upload(index_root: Path, doc_id: str) -> bool:
    """Remove ``uploads/<doc_id>/``; True when there was one."""
    d = uploads_dir(index_root) / doc_id
    if re.fullmatch(r"[0-9a-f]{16}", doc_id) and d.is_dir():
        shutil.rmtree(d, ignore_errors=True)
        return True
    return False


def remove_orphans(index_root: Path, keep: set[str]) -> list[str]:
    """Remove the stored uploads whose doc_id is not in ``keep`` (indexed or queued); their ids."""
    d = uploads_dir(index_root)
    gone = [p.name for p in d.iterdir() if p.is_dir() and p.name != PARTIAL and p.name not in keep] \
        if d.is_dir() else []
    return [g for g in gone if remove_upload(index_root, g)]
