"""What ingestion produces: documents, pages, text blocks and typed evidence objects.

Everything here is a plain dataclass that round-trips through JSON
(`to_dict` / `from_dict`). Page numbers are 1-based. Object ids are stable and
readable: ``p12:table:2`` is the second table on page 12.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

BBox = tuple[float, float, float, float]  # x0, y0, x1, y1 in PDF points

ObjectType = Literal["table", "figure", "equation", "citation_context", "text_span"]
OBJECT_TYPES: tuple[str, ...] = ("table", "figure", "equation", "citation_context", "text_span")


@dataclass
class TextBlock:
    """A block of text on a page, as PyMuPDF reports it, with its dominant font."""

    text: str
    bbox: BBox
    font_size: float
    bold: bool = False
    rotated: bool = False  # vertical text, e.g. an arXiv margin stamp: never a heading
    # one box per line of ``text`` (PyMuPDF's lines: in a table, its cells), so a page's regions are
    # read from the index instead of the source PDF; empty in indexes built before it was stored
    lines: list[list[float]] = field(default_factory=list)


@dataclass
class EvidenceObject:
    """A typed, locatable piece of evidence on a page (table, figure, equation, citation context)."""

    object_id: str  # e.g. "p12:table:2"
    type: str  # one of OBJECT_TYPES
    page: int  # 1-based
    bbox: BBox
    label: str = ""  # printed label when found: "Table 2", "Figure 3", "(4)"
    caption: str = ""  # caption line(s) near the object
    text: str = ""  # cell text (tables), the equation, the citing sentence, ...

    @staticmethod
    def make_id(page: int, type_: str, ordinal: int) -> str:
        return f"p{page}:{type_}:{ordinal}"


@dataclass
class Page:
    """One page: its text, blocks, section path and evidence objects."""

    number: int  # 1-based
    text: str
    width: float
    height: float
    blocks: list[TextBlock] = field(default_factory=list)
    section_path: list[str] = field(default_factory=list)
    objects: list[EvidenceObject] = field(default_factory=list)
    n_images: int = 0
    ocr: bool = False  # text came from OCR
    image_only: bool = False  # no text layer and no OCR available
    # an OCR'd page's text blocks with their line boxes (where the OCR engine gives them): kept apart
    # from ``blocks``, whose font sizes headings and titles are read from, since OCR gives none
    ocr_blocks: list[TextBlock] = field(default_factory=list)

    @property
    def section(self) -> str:
        return " > ".join(self.section_path)


@dataclass
class TocEntry:
    level: int
    title: str
    page: int


@dataclass
class Document:
    """A whole ingested PDF. ``doc_id`` is the content hash, so re-adding the same file is a no-op."""

    doc_id: str
    file_name: str
    path: str
    n_pages: int
    title: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    toc: list[TocEntry] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def page(self, number: int) -> Page:
        """The 1-based page ``number``."""
        if not 1 <= number <= self.n_pages:
            raise ValueError(f"{self.file_name} has pages 1..{self.n_pages}, not {number}")
        return self.pages[number - 1]

    def objects(self, type_: str | None = None) -> list[EvidenceObject]:
        return [o for p in self.pages for o in p.objects if type_ is None or o.type == type_]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Document:
        pages = [
            Page(
                **{
                    **p,
                    "blocks": [TextBlock(**{**b, "bbox": tuple(b["bbox"])}) for b in p["blocks"]],
                    "ocr_blocks": [TextBlock(**{**b, "bbox": tuple(b["bbox"])}) for b in p.get("ocr_blocks", [])],
                    "objects": [EvidenceObject(**{**o, "bbox": tuple(o["bbox"])}) for o in p["objects"]],
                }
            )
            for p in d["pages"]
        ]
        toc = [TocEntry(**t) for t in d.get("toc", [])]
        return cls(**{**d, "pages": pages, "toc": toc})
