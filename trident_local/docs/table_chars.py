"""A faster character list for PyMuPDF's ``find_tables``, with the same content.

Why: ``find_tables`` starts by turning every character of the page into a pdfplumber-style
dict (``pymupdf.table.make_chars``), building a ``Rect``, a ``Point`` and two matrix products
per character in Python. On the text-layer benchmark set that is 44 of the 70 CPU-ms a page
that table detection costs. :func:`make_chars` builds the identical dicts (every key, every
value, in order) with plain float arithmetic for the matrix of an upright page,
``(1, 0, 0, -1, e, f)`` (``find_tables`` derotates a rotated page first), rounding the moved
coordinates to float32 as MuPDF computes them. Any other matrix runs PyMuPDF's own function,
and so does a PyMuPDF whose ``make_chars`` source is not the one this was checked against.

The text page is built without ``TEXT_COLLECT_STYLES``: MuPDF's style pass (underline,
strike-out and fake-bold detection against the page's vector paths) made the text page 15x
dearer on ruled pages (10 of the 57 CPU-ms a ruled page that table detection cost on the public
subset). The line strategy reads the characters only to ask whether a joined rectangle holds any
text; styles feed the table header, which is computed lazily and never read here. Without the
pass MuPDF keeps a few more characters (zero-height spaces at line ends, overprinted copies of
fake-bold text), so the lists differ on such pages; the tables were identical on all 1,849 ruled
pages of the public subset. The tests hold the dicts equal on pages without those and the tables
equal everywhere.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import threading
from array import array
from collections.abc import Iterator
from contextvars import ContextVar

import numpy as np
import pymupdf
import pymupdf.table as _table

_STOCK = _table.make_chars
_STOCK_IN_RECT = getattr(_table, "chars_in_rect", None)  # None: an older PyMuPDF, not supported()
_LOCK = threading.Lock()
# sha256 (first 16 hex digits) of the source of the PyMuPDF ``make_chars`` this one reproduces;
# a PyMuPDF whose function reads otherwise keeps its own.
CHECKED_SOURCES = ("4631a69307e0bb81",)  # PyMuPDF 2.0
CHECKED_IN_RECT_SOURCES = ("ea960d781eb3462a",)  # its ``chars_in_rect``, PyMuPDF 2.0
# PyMuPDF's flags less the style pass (see the module docstring).
TEXT_FLAGS = _table.FLAGS & ~getattr(pymupdf, "TEXT_COLLECT_STYLES", 0)
# The list :func:`make_chars` filled, its length then, and its characters' x0, x1, y0, y1 as rows.
_BOXES: ContextVar[tuple[list, int, np.ndarray] | None] = ContextVar("trident_table_boxes", default=None)


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
    textpage = page.get_textpage(clip=clip, flags=TEXT_FLAGS)
    blocks = page.get_text("rawdict", textpage=textpage)["blocks"]
    moved: list[float] = []  # per char: h - y1, h - y0, the origin's e + x and h - y; rounded below
    across: list[float] = []  # per char: x0, x1
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
                    across += (x0, x1)
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
    moved32 = array("f", moved)
    rounded = moved32.tolist()
    for i, c in enumerate(chars[first:]):
        c["y0"], c["y1"], ox, oy = rounded[4 * i : 4 * i + 4]
        c["matrix"] += (ox, oy)
    if first == 0:  # the boxes describe the whole list: chars_in_rect may test them at once
        ys = np.frombuffer(moved32, dtype=np.float32).reshape(-1, 4)[:, :2].astype(np.float64)
        boxes = np.concatenate([np.asarray(across, dtype=np.float64).reshape(-1, 2), ys], axis=1).T
        _BOXES.set((chars, len(chars), np.ascontiguousarray(boxes)))
    return textpage


def chars_in_rect(chars: object, rect: object) -> bool:
    """``pymupdf.table.chars_in_rect`` as one array test over the boxes :func:`make_chars` kept.

    Why: PyMuPDF's is a Python scan of every character (indexing a ``Rect`` four times each) for
    every joined rectangle of rules, a few CPU-ms on a ruled page. The same comparisons in the
    same order of operands give the same answer, NaN included; any list other than the one
    :func:`make_chars` filled, or one changed since, takes PyMuPDF's own scan."""
    own_list = getattr(chars, "_list", None)  # PyMuPDF's per-call proxy of the list
    listed = own_list() if callable(own_list) else chars
    kept = _BOXES.get()
    if kept is None or kept[0] is not listed or kept[1] != len(listed):
        return _STOCK_IN_RECT(chars, rect)
    x0, x1, y0, y1 = kept[2]
    r0, r1, r2, r3 = rect[0], rect[1], rect[2], rect[3]
    return bool(((r0 <= x0) & (x1 <= r2) & (r1 <= y0) & (r3 >= y1)).any())


@functools.cache
def supported() -> bool:
    """Whether PyMuPDF's ``make_chars`` and ``chars_in_rect`` are the ones checked against."""
    try:
        sources = inspect.getsource(_STOCK), inspect.getsource(_STOCK_IN_RECT)
    except (OSError, TypeError):  # no source shipped: cannot tell, keep PyMuPDF's
        return False
    digests = [hashlib.sha256(source.encode()).hexdigest()[:16] for source in sources]
    return digests[0] in CHECKED_SOURCES and digests[1] in CHECKED_IN_RECT_SOURCES


@contextlib.contextmanager
def fast_chars(enabled: bool = True) -> Iterator[None]:
    """Run ``find_tables`` inside with :func:`make_chars` and :func:`chars_in_rect` (only where
    this PyMuPDF was checked)."""
    if not enabled or not supported():
        yield
        return
    with _LOCK:
        _table.make_chars, _table.chars_in_rect = make_chars, chars_in_rect
        try:
            yield
        finally:
            _table.make_chars, _table.chars_in_rect = _STOCK, _STOCK_IN_RECT
            _BOXES.set(None)


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
