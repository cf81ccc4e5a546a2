"""Open a PDF or fail with one clear line: not a PDF, corrupt, encrypted, empty, too big."""

from __future__ import annotations

import hashlib
import mmap
import re
from pathlib import Path

import pymupdf

from trident_local.errors import IngestError

MAX_BYTES = 2 * 1024**3  # 2 GiB: larger is almost certainly not a document we can index
MAX_PAGES = 20_000
TRUNCATED = "truncated PDF (it ends before its %%EOF marker: cut off in transfer or on disk); send the whole file"

pymupdf.TOOLS.mupdf_display_errors(False)  # MuPDF prints repair chatter to stderr otherwise


def content_hash(path: Path) -> str:
    """doc_id: the first 16 hex digits of the file's SHA-256 (stable across renames)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def _cut_off(p: Path, tail: int = 4096) -> bool:
    """No ``%%EOF`` near the end: the file stops short (MuPDF's repair would keep only the pages it
    finds before the cut, and index the lost ones as blank). A repaired file that ends properly
    (a broken cross-reference table, say) is readable and is kept, with a warning from ingestion."""
    with open(p, "rb") as f:
        f.seek(max(0, p.stat().st_size - tail))
        return b"%%EOF" not in f.read()


_UPDATE_SYNTAX = re.compile(rb"\d+\s+\d+\s+obj\b|\bxref\b|\btrailer\b|\bstartxref\b")


def _update_cut(p: Path) -> bool:
    """PDF objects after the last ``%%EOF``: an incremental update (a later revision) that was cut
    off. MuPDF then opens the revision before it without a repair, so the cut is never reported and
    the pages the update added are silently lost. Padding or junk after ``%%EOF`` is not syntax."""
    with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        end = m.rfind(b"%%EOF")
        return end >= 0 and _UPDATE_SYNTAX.search(m, end + 5) is not None


def open_pdf(path: str | Path) -> pymupdf.Document:
    """Open ``path`` with PyMuPDF after checks that give a user-readable reason for failure."""
    p = Path(path)
    if not p.is_file():
        raise IngestError(str(p), "no such file")
    size = p.stat().st_size
    if size == 0:
        raise IngestError(str(p), "empty file (0 bytes)")
    if size > MAX_BYTES:
        raise IngestError(str(p), f"file is {size / 1024**3:.1f} GiB; the limit is {MAX_BYTES / 1024**3:.0f} GiB")
    with open(p, "rb") as f:
        head = f.read(1024)
    if b"%PDF-" not in head:
        raise IngestError(str(p), "not a PDF (no %PDF- header)")
    try:
        doc = pymupdf.open(p, filetype="pdf")
    except Exception as e:  # pymupdf raises FileDataError / RuntimeError variants
        if _cut_off(p):
            raise IngestError(str(p), TRUNCATED) from e
        raise IngestError(str(p), f"corrupt PDF ({str(e).strip() or type(e).__name__})") from e
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise IngestError(str(p), "encrypted PDF (password required); decrypt it first, e.g. with qpdf --decrypt")
    try:
        n = doc.page_count
    except Exception as e:
        doc.close()
        raise IngestError(str(p), f"corrupt PDF ({e})") from e
    if (getattr(doc, "is_repaired", False) and _cut_off(p)) or _update_cut(p):
        doc.close()
        raise IngestError(str(p), TRUNCATED)
    if n == 0:
        repaired = getattr(doc, "is_repaired", False)
        doc.close()
        raise IngestError(str(p), "corrupt PDF (damaged beyond repair: no readable pages)" if repaired
                          else "PDF has no pages")
    if n > MAX_PAGES:
        doc.close()
        raise IngestError(str(p), f"PDF has {n} pages; the limit is {MAX_PAGES}")
    return doc
