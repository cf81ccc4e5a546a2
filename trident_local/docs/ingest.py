"""PDF -> Document: text blocks with fonts, section paths, evidence objects, OCR for image-only pages."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from trident_local.docs.model import Document, Page, TextBlock, TocEntry
from trident_local.docs.objects import detect_objects
from trident_local.docs.pdf_open import content_hash, open_pdf
from trident_local.docs.render import render_dpi
from trident_local.docs.sections import assign_section_paths
from trident_local.errors import TridentError
from trident_local.models.protocols import OCREngine

log = logging.getLogger(__name__)

MIN_TEXT_CHARS = 20  # below this a page is treated as having no text layer
OCR_DPI = 200
# Pixels handed to OCR per page: A4 at 200 dpi is 3.9 Mpx, A3 7.7 Mpx. A huge page (a 5000 pt
# square is 193 Mpx at 200 dpi, 4 GB of RAM in MuPDF and tesseract) is read at a lower dpi instead.
OCR_MAX_PIXELS = 16_000_000
BLANK_CHECK_DPI = 12  # a page that is one colour at this resolution has nothing to read


class IngestCancelled(TridentError):
    """The caller asked to stop between pages (a cancelled job); nothing of the file was kept."""


@dataclass
class IngestControl:
    """What a caller that runs ingestion inline (the service's job worker) can ask of it:
    stop between pages, hear of each page read, and cap the pages sent to OCR."""

    should_stop: Callable[[], bool] = lambda: False
    on_page: Callable[[int], None] = lambda _n: None
    ocr_max_pages: int | None = None  # None: no cap; past it pages stay image-only, with a warning


def is_blank(page: pymupdf.Page) -> bool:
    """True when the page renders to a single colour: OCR would read nothing, so it is not run."""
    pix = page.get_pixmap(dpi=render_dpi(page.rect.width, page.rect.height, BLANK_CHECK_DPI, OCR_MAX_PIXELS),
                          alpha=False)
    return bool(pix.is_unicolor)


def _blocks(page: pymupdf.Page) -> list[TextBlock]:
    """Text blocks in reading order with their dominant (character-weighted) font size and weight."""
    out: list[TextBlock] = []
    data = page.get_text("dict", sort=True, flags=pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_IMAGES)
    for b in data.get("blocks", []):
        if b.get("type") != 0:
            continue
        lines, boxes, sizes, bold_chars, n_chars = [], [], Counter(), 0, 0
        rotated = any(abs(line.get("dir", (1.0, 0.0))[1]) > 0.5 for line in b.get("lines", []))
        for line in b.get("lines", []):
            spans = line.get("spans", [])
            text = "".join(s.get("text", "") for s in spans).strip()
            if text:
                lines.append(text)
                boxes.append([round(v, 1) for v in line["bbox"]])
            for s in spans:
                n = len(s.get("text", "").strip())
                sizes[round(s.get("size", 0.0), 1)] += n
                n_chars += n
                if s.get("flags", 0) & 16 or "bold" in s.get("font", "").lower():
                    bold_chars += n
        if not lines:
            continue
        size = sizes.most_common(1)[0][0] if sizes else 0.0
        out.append(TextBlock(text="\n".join(lines), bbox=tuple(round(v, 2) for v in b["bbox"]), font_size=size,
                             bold=n_chars > 0 and bold_chars / n_chars > 0.6, rotated=rotated, lines=boxes))
    return out


def _ocr_page(page: pymupdf.Page, ocr: OCREngine) -> tuple[str, list[TextBlock]]:
    """The page's OCR text, and its text blocks with line boxes in PDF points where the engine gives
    them (``ocr_lines``: tesseract does), so regions point into scanned pages too."""
    from PIL import Image

    pix = page.get_pixmap(dpi=render_dpi(page.rect.width, page.rect.height, OCR_DPI, OCR_MAX_PIXELS))
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples) if pix.n == 3 else Image.frombytes(
        "RGB", (pix.width, pix.height), pymupdf.Pixmap(pymupdf.csRGB, pix).samples)
    lines_of = getattr(ocr, "ocr_lines", None)
    if lines_of is None:
        return ocr.ocr(image).strip(), []
    sx, sy = page.rect.width / pix.width, page.rect.height / pix.height
    blocks = []
    for block in lines_of(image):
        boxes = [[round(b[0] * sx, 1), round(b[1] * sy, 1), round(b[2] * sx, 1), round(b[3] * sy, 1)]
                 for _, b in block]
        bbox = (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
        blocks.append(TextBlock(text="\n".join(t for t, _ in block), bbox=bbox, font_size=0.0, lines=boxes))
    return "\n\n".join(b.text for b in blocks), blocks


def ingest_pdf(path: str | Path, *, ocr: OCREngine | None = None, doc_id: str | None = None,
               control: IngestControl | None = None) -> Document:
    """Read one PDF into a :class:`Document`. Raises IngestError with a one-line reason on bad input.

    ``ocr``: used for pages without a text layer; when None (or unavailable) such
    pages are kept as image-only and a warning is recorded on the document.
    ``control``: cancel between pages, per-page progress, an OCR page cap (see IngestControl).
    """
    p = Path(path)
    ctl = control or IngestControl()
    pdf = open_pdf(p)
    try:
        meta = {k: v for k, v in (pdf.metadata or {}).items() if isinstance(v, str) and v}
        toc = [TocEntry(level=int(lv), title=str(t), page=int(pg)) for lv, t, pg, *_ in pdf.get_toc(simple=True)]
        doc = Document(
            doc_id=doc_id or content_hash(p),
            file_name=p.name,
            path=str(p.resolve()),
            n_pages=pdf.page_count,
            title=meta.get("title", "").strip(),
            metadata=meta,
            toc=toc,
        )
        if getattr(pdf, "is_repaired", False):
            doc.warnings.append("the file was damaged and repaired on opening: pages may be missing or blank")
        ocr_ok = ocr is not None and ocr.available()
        n_image_only = n_ocr = n_over_cap = 0
        for i, page in enumerate(pdf, start=1):
            if ctl.should_stop():
                raise IngestCancelled(f"{p.name}: cancelled at page {i} of {pdf.page_count}")
            try:
                blocks = _blocks(page)
            except Exception as e:  # a damaged page must not lose the document
                doc.warnings.append(f"page {i}: text extraction failed ({e})")
                blocks = []
            text = "\n\n".join(b.text for b in blocks)
            n_images = len(page.get_images(full=False))
            pg = Page(number=i, text=text, width=page.rect.width, height=page.rect.height,
                      blocks=blocks, n_images=n_images)
            if len(text.strip()) < MIN_TEXT_CHARS:
                over_cap = ctl.ocr_max_pages is not None and n_ocr >= ctl.ocr_max_pages
                if ocr_ok and not over_cap:
                    try:
                        if not is_blank(page):
                            n_ocr += 1
                            pg.text, pg.ocr_blocks = _ocr_page(page, ocr)  # type: ignore[arg-type]
                        pg.ocr = True
                    except Exception as e:
                        doc.warnings.append(f"page {i}: OCR failed ({e})")
                        pg.image_only = True
                else:
                    pg.image_only = True
                    n_over_cap += ocr_ok
                    n_image_only += not ocr_ok
            else:
                try:
                    pg.objects = detect_objects(page, i, blocks)
                except Exception as e:
                    doc.warnings.append(f"page {i}: object detection failed ({e})")
            doc.pages.append(pg)
            ctl.on_page(i)
        if n_over_cap:
            doc.warnings.append(f"{n_over_cap} page(s) past the OCR limit of {ctl.ocr_max_pages} pages per file "
                                "were not OCR'd: indexed as image-only")
        if n_image_only:
            doc.warnings.append(f"{n_image_only} page(s) have no text layer and no OCR: indexed as image-only")
        if not doc.title:
            first = doc.pages[0].blocks if doc.pages else []
            if first:
                doc.title = max(first[:8], key=lambda b: b.font_size).text.replace("\n", " ")[:200]
        assign_section_paths(doc.pages, doc.toc)
        return doc
    finally:
        pdf.close()
