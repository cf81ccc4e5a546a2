"""A page's word layout as regions a reader can be pointed at: cells (PyMuPDF's text lines, which in a
table are its cells), rows (cells side by side on one baseline) and their headers.

Built from the line boxes the index stores with each text block at ingest (PyMuPDF's lines, read
anyway for the page's text), so asking costs no PDF parsing. An index built before line boxes were
stored has its pages' words read from the source PDF instead (10-40 ms a page). A scanned page's
lines are the OCR's (tesseract's line boxes, stored at ingest); an OCR engine that gives no boxes
leaves the page's stored text blocks as its only regions.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

BBox = tuple[float, float, float, float]
# a year as it heads a column ("2023", "FY2023") or as a number normalised from one
YEAR = re.compile(r"^(?:FY ?)?(?:19|20)\d\d$")

# Two cells on one baseline join a row unless both are long text (two columns of prose side by
# side are not a table row): a cell wider than this share of the page counts as prose.
PROSE_WIDTH = 0.3


@dataclass
class Region:
    """The smallest box that carries a piece of evidence: bbox in PDF points, PyMuPDF page coordinates
    (origin top left), page 1-based."""

    page: int
    bbox: BBox
    kind: str  # "cell" | "row" | "line" | "row-header" | "column-header" | "block"
    text: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["bbox"] = [round(v, 1) for v in self.bbox]
        return d

    @property
    def area(self) -> float:
        return max(0.0, self.bbox[2] - self.bbox[0]) * max(0.0, self.bbox[3] - self.bbox[1])


@dataclass
class Cell:
    bbox: BBox
    text: str

    @property
    def y(self) -> float:
        return (self.bbox[1] + self.bbox[3]) / 2

    @cached_property
    def numeric(self) -> bool:
        return any(ch.isdigit() for ch in self.text) and sum(ch.isalpha() for ch in self.text) <= 3

    @cached_property
    def value(self) -> bool:
        """A number in a table body: numeric and not a year heading a column."""
        return self.numeric and not YEAR.match(self.text.strip())


@dataclass
class Row:
    cells: list[Cell] = field(default_factory=list)

    @property
    def bbox(self) -> BBox:
        return union(c.bbox for c in self.cells)

    @property
    def text(self) -> str:
        return " | ".join(c.text for c in self.cells)

    # cached: a row's cells are final once the layout is built (read only after that)
    @cached_property
    def is_table_row(self) -> bool:
        """A label and values side by side (a column-header row of years is not one)."""
        return len(self.cells) >= 2 and any(c.value for c in self.cells)

    @cached_property
    def is_header_row(self) -> bool:
        """Column headings: several cells, none of them a value."""
        return len(self.cells) >= 2 and not any(c.value for c in self.cells)


@dataclass
class PageLayout:
    page: int
    width: float
    height: float
    rows: list[Row]  # top to bottom

    @property
    def area(self) -> float:
        return self.width * self.height

    @cached_property
    def row_terms(self) -> list[list[str]]:
        """Each row's content terms (computed once: an answer's values, its headers and the question
        all score the same rows)."""
        from trident_local.text import terms

        return [terms(r.text) for r in self.rows]


def union(boxes) -> BBox:
    bs = list(boxes)
    return (min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs))


def _rows(cells: list[Cell], width: float) -> list[Row]:
    """Cells grouped into rows: a cell joins the row whose vertical middle it shares (within half its
    height), unless it and the row's nearest cell are both prose-wide."""
    rows: list[Row] = []
    for c in sorted(cells, key=lambda c: (c.y, c.bbox[0])):
        h = max(1.0, c.bbox[3] - c.bbox[1])
        for r in reversed(rows[-6:]):  # only recent rows can share a baseline
            rb = r.bbox
            if abs((rb[1] + rb[3]) / 2 - c.y) <= h / 2:
                prose = all((x.bbox[2] - x.bbox[0]) > PROSE_WIDTH * width for x in (c, r.cells[-1]))
                if not prose:
                    r.cells.append(c)
                    break
        else:
            rows.append(Row([c]))
    for r in rows:
        r.cells.sort(key=lambda c: c.bbox[0])
    return rows


def _stored_layout(page: int, blocks, size: tuple[float, float]) -> PageLayout:
    """Cells from the blocks' stored line boxes (a block whose lines do not match its text is one cell)."""
    cells = []
    for b in blocks:
        texts = b.text.split("\n")
        if len(texts) == len(b.lines):
            cells += [Cell(tuple(box), " ".join(t.split())) for t, box in zip(texts, b.lines, strict=True) if t.strip()]
        elif b.text.strip():
            cells.append(Cell(tuple(b.bbox), " ".join(b.text.split())))
    return PageLayout(page, size[0], size[1], _rows(cells, size[0]))


@lru_cache(maxsize=64)
def _pdf_layout(path: str, mtime: float, page: int) -> PageLayout | None:
    import pymupdf

    try:
        with pymupdf.open(path) as doc:
            if not 1 <= page <= doc.page_count:
                return None
            p = doc[page - 1]
            words = p.get_text("words", sort=False)
            rect = p.rect
    except Exception:  # noqa: BLE001 - a source that cannot be read has no word layout; blocks stand in
        return None
    lines: dict[tuple[int, int], list] = defaultdict(list)
    for x0, y0, x1, y1, w, b, ln, _ in words:
        lines[(b, ln)].append((x0, y0, x1, y1, w))
    cells = [Cell(union(ws[:4] for ws in v), " ".join(ws[4] for ws in v)) for v in lines.values()]
    if not cells:
        return None
    return PageLayout(page, rect.width, rect.height, _rows(cells, rect.width))


def page_layout(source: str | Path, page: int, blocks=(), size: tuple[float, float] = (0.0, 0.0)) -> PageLayout:
    """The layout of ``page`` from the stored ``blocks`` (TextBlocks) when they carry line boxes, else
    from the PDF at ``source``; the blocks themselves when the PDF has no words there (scanned page)
    or cannot be read."""
    if any(getattr(b, "lines", None) for b in blocks):
        return _stored_layout(page, blocks, size)
    p = Path(source)
    try:
        lay = _pdf_layout(str(p), p.stat().st_mtime, page)
    except OSError:
        lay = None
    if lay is not None:
        return lay
    cells = [Cell(tuple(b.bbox), " ".join(b.text.split())) for b in blocks if b.text.strip()]
    return PageLayout(page, size[0], size[1], [Row([c]) for c in sorted(cells, key=lambda c: c.y)])
