"""A faster character list for PyMuPDF's ``find_tables``, with the same content.

Why: ``find_tables`` starts by turning every character of the page into a pdfplumber-style
dict (``pymupdf.table.make_chars``), building a ``Rect``, a ``Point`` and two matrix products
per character in Python. On the text-layer benchmark set that is 44 of the 70 CPU-ms a page
that table detection costs. :func:`make_chars` builds the identical dicts (every key, every
value, in order) with plain float arithmetic for the matrix of an upright page,
``(1, 0, 0, -1, e, f)`` (``find_tables`` derotates a rotated page first), rounding the moved
coordinates to float32 as MuPDF computes them. Any other matrix runs PyMuPDF's own function,
and so does a PyMuPDF whose ``make_chars`` source is not the one this was checked against.
The tests hold both to the same dicts and the same tables.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import threading
from array import array
from collections.abc import Iterator

import pymupdf
import pymupdf.table as _table

_STOCK = _table.make_chars
_LOCK = threading.Lock()
# sha256 (first 16 hex digits) of the source of the PyMuPDF ``make_chars`` this one reproduces;
# a PyMuPDF whose function reads otherwise keeps its own.
CHECKED_SOURCES = ("4631a69307e0bb81",)  # PyMuPDF 2.0


def make_chars(page: pymupdf.Page, clip: object = None) -> pymupdf.TextPage:
    """``pymupdf.table.make_chars`` for an upright page; PyMuPDF's own function otherwise."""
    ctm = page.transformation_matrix
    if tuple(ctm)[:4] != (1.0, 0.0, 0.0, -1.0):
        return _STOCK(page, clip=clip)
    chars = _table.CHARS._list()
    first = len(chars)
    page_number = page.number + 1
    doctop_base = page.rect.height * page.number
    e, h = array("f", [ctm.e, ctm.f])  # MuPDF's matrices are float32
    textpage = page.get_textpage(clip=clip, flags=_table.FLAGS)
    blocks = page.get_text("rawdict", textpage=textpage)["blocks"]
    moved: list[float] = []  # per char: h - y1, h - y0, the origin's e + x and h - y; rounded below
    for block in blocks:
        for line in block["lines"]:
            cos, sin = line["dir"]
            cos, sin = round(cos, 4), round(sin, 4)
            upright = sin == 0
            for span in sorted(line["spans"], key=lambda s: s["bbox"][0]):
                fontname, fontsize = span["font"], span["size"]
                bold = bool(span["flags"] & pymupdf.TEXT_FONT_BOLD or span["char_flags"] & 8)
                color = pymupdf.sRGB_to_pdf(span["color"])
                for char in sorted(span["chars"], key=lambda c: c["bbox"][0]):
                    x0, y0, x1, y1 = char["bbox"]
                    ox, oy = char["origin"]
                    moved += (h - y1, h - y0, e + ox, h - oy)
                    chars.append({
                        "adv": x1 - x0 if upright else y1 - y0,
                        "bottom": y1,
                        "doctop": y0 + doctop_base,
                        "fontname": fontname,
                        "height": y1 - y0,
                        "matrix": (cos, -sin, sin, cos),
                        "ncs": "DeviceRGB",
                        "non_stroking_color": color,
                        "non_stroking_pattern": None,
                        "object_type": "char",
                        "page_number": page_number,
                        "size": fontsize if upright else y1 - y0,
                        "stroking_color": color,
                        "stroking_pattern": None,
                        "bold": bold,
                        "text": char["c"],
                        "top": y0,
                        "upright": upright,
                        "width": x1 - x0,
                        "x0": x0,
                        "x1": x1,
                        "y0": 0.0,
                        "y1": 0.0,
                    })  # fmt: skip
    # The sum or difference of two float32 values is exact in a double: one rounding to float32
    # (what the array does) gives MuPDF's float32 result.
    rounded = array("f", moved).tolist()
    for i, c in enumerate(chars[first:]):
        c["y0"], c["y1"], ox, oy = rounded[4 * i : 4 * i + 4]
        c["matrix"] += (ox, oy)
    return textpage


@functools.cache
def supported() -> bool:
    """Whether PyMuPDF's ``make_chars`` is the one :func:`make_chars` was checked against."""
    try:
        source = inspect.getsource(_STOCK)
    except (OSError, TypeError):  # no source shipped: cannot tell, keep PyMuPDF's
        return False
    return hashlib.sha256(source.encode()).hexdigest()[:16] in CHECKED_SOURCES


@contextlib.contextmanager
def fast_chars(enabled: bool = True) -> Iterator[None]:
    """Run ``find_tables`` inside with :func:`make_chars` (only where this PyMuPDF was checked)."""
    if not enabled or not supported():
        yield
        return
    with _LOCK:
        _table.make_chars = make_chars
        try:
            yield
        finally:
            _table.make_chars = _STOCK


def find_tables(page: pymupdf.Page, **kwargs: object) -> object | None:
    """``page.find_tables(**kwargs)`` with :func:`make_chars` where it applies, and once more with
    PyMuPDF's own character list if that attempt failed; None when every attempt failed (odd pages
    make ``find_tables`` raise or return None; a page without tables is then the answer)."""
    for fast in (True, False) if supported() else (False,):
        try:
            with fast_chars(fast):
                found = page.find_tables(**kwargs)
        except Exception:
            found = None
        if found is not None:
            return found
    return None
