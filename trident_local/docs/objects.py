"""Typed evidence objects on a page: tables, figures (with captions), equations, citation contexts.

Detectors are heuristics over PyMuPDF's output; each object gets a stable id
``p{page}:{type}:{ordinal}`` in reading order.
"""

from __future__ import annotations

import re

import numpy as np
import pymupdf

from trident_local.docs.model import BBox, EvidenceObject, TextBlock
from trident_local.docs.table_chars import find_tables

CAPTION = re.compile(
    r"^\s*(Figure|Fig\.?|Table|Tab\.|Chart|Exhibit|Algorithm)\s*([0-9]+[A-Za-z]?|[IVX]+)\s*([:.|,\u2013\u2014-])?\s*(\w+)?", re.I
)
# "Table 1 shows ..." is a reference to a table in running text, not its caption.
_REFERENCE_VERBS = {"shows", "show", "reports", "report", "summarises", "summarizes", "presents", "lists", "gives",
                    "illustrates", "compares", "depicts", "contains", "displays", "describes", "and", "in", "of",
                    "provides", "plots", "is", "are", "was", "also", "demonstrates", "showcases", "indicates",
                    "indicating", "shows:", "highlights", "reveals", "suggests", "confirms", "we", "the", "our"}
_CITE_NUMERIC = re.compile(r"\[\d+(?:\s*[,–-]\s*\d+)*\]")
_CITE_AUTHOR = re.compile(
    r"\((?:see\s+)?[A-Z][A-Za-z'`-]+(?:\s+et\s+al\.?|\s+(?:and|&)\s+[A-Z][A-Za-z'`-]+)?,?\s+(?:19|20)\d{2}[a-z]?"
    r"(?:;\s*[A-Z][^()]*?(?:19|20)\d{2}[a-z]?)*\)"
)
_CITE_INLINE_AUTHOR = re.compile(r"[A-Z][A-Za-z'`-]+(?:\s+et\s+al\.?)?\s+\((?:19|20)\d{2}[a-z]?\)")
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\bal\.)(?<!\bet\.)(?<!\bvs\.)(?<!\bFig\.)\s+(?=[A-Z(\[])")
_REFERENCE_ENTRY = re.compile(r"^\s*\[\d+\]\s")
_EQ_NUMBER = re.compile(r"\(\s*\d{1,3}(\.\d+)?\s*\)\s*$")
_MATH_CHARS = set("=+−-×÷∑∏∫√≤≥≈≠∈∉∀∃∂∇αβγδεζηθλμνξπρστφχψωΣΠΔΩ^_|·⋅")
_MIN_FIGURE_AREA = 2500.0  # pt^2, about 5 x 5 cm... smaller images are icons and bullets


def _overlap(a: BBox, b: BBox) -> float:
    """Intersection area over the smaller box's area."""
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    if x1 <= x0 or y1 <= y0:
        return 0.0
    inter = (x1 - x0) * (y1 - y0)
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])) or 1.0
    return inter / smaller


def _area(b: BBox) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def caption_blocks(blocks: list[TextBlock]) -> list[tuple[str, str, TextBlock]]:
    """(kind, label, block) for blocks that start like a caption; kind is "table" or "figure"."""
    out = []
    for b in blocks:
        m = CAPTION.match(b.text)
        sep = m.group(3) if m else None
        if m and (sep == "," or (not sep and (m.group(4) or "").lower() in _REFERENCE_VERBS)):
            continue  # "Figure 2, indicating ..." / "Table 1 shows ...": a reference, not a caption
        if m:
            word = m.group(1).lower()
            kind = "table" if word.startswith("tab") else "figure"
            label = f"{'Table' if kind == 'table' else 'Figure'} {m.group(2)}"
            if word.startswith("alg"):
                kind, label = "equation", f"Algorithm {m.group(2)}"
            out.append((kind, label, b))
    return out


def _nearest_caption(bbox: BBox, caps: list[tuple[str, str, TextBlock]], kind: str, used: set[int]):
    best, best_d = None, 1e9
    for i, (k, _label, b) in enumerate(caps):
        if k != kind or i in used:
            continue
        # vertical distance between the object and the caption block, horizontal overlap required
        if b.bbox[2] < bbox[0] or b.bbox[0] > bbox[2]:
            continue
        d = min(abs(b.bbox[1] - bbox[3]), abs(bbox[1] - b.bbox[3]))
        if d < best_d and d < 80:
            best, best_d = i, d
    return best


class _PageWords:
    """A page's words (PyMuPDF's ``get_text("words", sort=True)``) with their centres as arrays:
    a table's cells each test every word, one array test a cell instead of a Python scan."""

    def __init__(self, words: list) -> None:
        self.text = [w[4] for w in words]
        boxes = np.asarray([w[:4] for w in words], dtype=np.float64).reshape(-1, 4)
        self.cx = (boxes[:, 0] + boxes[:, 2]) / 2
        self.cy = (boxes[:, 1] + boxes[:, 3]) / 2

    def in_cell(self, cell: tuple | None) -> str:
        """Words whose centre lies in the cell (edges included), in reading order."""
        if not cell:
            return ""
        x0, y0, x1, y1 = cell
        inside = (x0 <= self.cx) & (self.cx <= x1) & (y0 <= self.cy) & (self.cy <= y1)
        return " ".join(self.text[i] for i in np.flatnonzero(inside))


def _has_rules(page: pymupdf.Page, minimum: int = 2) -> bool:
    """Whether the page draws horizontal AND vertical rules (lines or rectangle edges): without
    both, PyMuPDF's line strategy cannot form a single cell, so its (slow) search is skipped."""
    try:
        paths = page.get_cdrawings()
    except Exception:
        return True
    h = v = 0
    for path in paths:
        for item in path.get("items", ()):
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                if abs(y1 - y0) < 1 and abs(x1 - x0) > 5:
                    h += 1
                elif abs(x1 - x0) < 1 and abs(y1 - y0) > 5:
                    v += 1
            elif item[0] == "re":
                r = item[1]
                w, ht = abs(r[2] - r[0]), abs(r[3] - r[1])
                if w > 5 and ht > 5:
                    h, v = h + 2, v + 2
                elif ht <= 3 and w > 5:
                    h += 1
                elif w <= 3 and ht > 5:
                    v += 1
            if h >= minimum and v >= minimum:
                return True
    return False


def detect_tables(page: pymupdf.Page) -> list[tuple[BBox, str]]:
    """Ruled tables found by PyMuPDF's line strategy, with their cells as "a | b" lines.

    A table drawn without rules is kept by its caption only; its cells are rebuilt from the word
    blocks where an answer needs them (:mod:`trident_local.generate.tables`)."""
    out: list[tuple[BBox, str]] = []
    words = None
    if not _has_rules(page):  # the line strategy cannot find a table on a page without rules: skip its cost
        return out
    # use_layout=False: the ONNX layout model costs ~1 s a page on CPU; ruled-line detection is ~50x faster
    found = find_tables(page, use_layout=False)  # the same character list at less than half the cost
    if found is None:
        return out
    if found.tables:
        words = _PageWords(page.get_text("words", sort=True))
    for t in found.tables:
        try:  # cell text from the page's words: Table.extract() can scramble glyph order
            cells = [[words.in_cell(c) for c in row.cells] for row in t.rows]
        except Exception:
            cells = []
        if len(cells) < 2 or max((len(r) for r in cells), default=0) < 2:
            continue
        text = "\n".join(" | ".join(r) for r in cells)
        out.append((tuple(t.bbox), text))
    return out


def detect_figures(page: pymupdf.Page, table_boxes: list[BBox]) -> list[BBox]:
    """Raster images and clusters of vector drawings that are big enough and not tables."""
    boxes: list[BBox] = []
    try:
        for info in page.get_image_info():
            boxes.append(tuple(info["bbox"]))
    except Exception:
        pass
    try:
        for r in page.cluster_drawings():
            boxes.append((r.x0, r.y0, r.x1, r.y1))
    except Exception:
        pass
    page_area = page.rect.width * page.rect.height
    kept: list[BBox] = []
    for b in sorted(boxes, key=_area, reverse=True):
        a = _area(b)
        if a < _MIN_FIGURE_AREA or a > 0.95 * page_area:
            continue
        if any(_overlap(b, t) > 0.5 for t in table_boxes) or any(_overlap(b, k) > 0.6 for k in kept):
            continue
        kept.append(b)
    return sorted(kept, key=lambda b: (b[1], b[0]))


def _is_display_math(b: TextBlock, page_width: float) -> bool:
    text = b.text.strip()
    if not text or len(text) > 300 or "\n" in text.strip() and text.count("\n") > 3:
        return False
    math = sum(c in _MATH_CHARS for c in text)
    alpha_words = len(re.findall(r"[A-Za-z]{4,}", text))
    centered = abs((b.bbox[0] + b.bbox[2]) / 2 - page_width / 2) < page_width * 0.15
    if _EQ_NUMBER.search(text) and math >= 1 and alpha_words <= 4:
        return True
    return centered and "=" in text and math >= 2 and alpha_words <= 2 and len(text) < 160


def detect_equations(blocks: list[TextBlock], page_width: float) -> list[TextBlock]:
    return [b for b in blocks if _is_display_math(b, page_width)]


def citation_sentences(block: TextBlock) -> list[str]:
    """Sentences of the block that carry a citation marker; bibliography entries are not contexts."""
    if _REFERENCE_ENTRY.match(block.text):
        return []
    text = " ".join(block.text.split())
    out = []
    for s in _SENTENCE.split(text):
        if _CITE_NUMERIC.search(s) or _CITE_AUTHOR.search(s) or _CITE_INLINE_AUTHOR.search(s):
            out.append(s.strip())
    return out


def detect_objects(page: pymupdf.Page, number: int, blocks: list[TextBlock]) -> list[EvidenceObject]:
    """All evidence objects on one page, ids numbered per type in reading order."""
    caps = caption_blocks(blocks)
    used: set[int] = set()
    objs: list[EvidenceObject] = []

    def attach(kind: str, bbox: BBox, text: str = "") -> EvidenceObject:
        i = _nearest_caption(bbox, caps, kind, used)
        label = caption = ""
        if i is not None:
            used.add(i)
            _, label, cb = caps[i]
            caption = " ".join(cb.text.split())[:400]
        return EvidenceObject("", kind, number, bbox, label=label, caption=caption, text=text)

    tables = detect_tables(page)
    for bbox, text in tables:
        objs.append(attach("table", bbox, text))
    for bbox in detect_figures(page, [b for b, _ in tables]):
        objs.append(attach("figure", bbox))
    # captions with no detected object still mark an object (e.g. a table drawn without rules)
    for i, (kind, label, cb) in enumerate(caps):
        if i not in used and kind in ("table", "figure"):
            objs.append(EvidenceObject("", kind, number, cb.bbox, label=label, caption=" ".join(cb.text.split())[:400]))
        elif i not in used and kind == "equation":
            objs.append(EvidenceObject("", "equation", number, cb.bbox, label=label, text=" ".join(cb.text.split())[:600]))
    for b in detect_equations(blocks, page.rect.width):
        m = _EQ_NUMBER.search(b.text.strip())
        objs.append(EvidenceObject("", "equation", number, b.bbox, label=m.group(0).strip() if m else "", text=b.text.strip()))
    for b in blocks:
        for s in citation_sentences(b):
            objs.append(EvidenceObject("", "citation_context", number, b.bbox, text=s[:600]))

    objs.sort(key=lambda o: (o.type, o.bbox[1], o.bbox[0]))
    counts: dict[str, int] = {}
    for o in objs:
        counts[o.type] = counts.get(o.type, 0) + 1
        o.object_id = EvidenceObject.make_id(number, o.type, counts[o.type])
    return objs
