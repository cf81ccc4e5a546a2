"""Ingestion: objects, sections, OCR, and a clear one-line error for every kind of bad input."""

from __future__ import annotations

import shutil

import pytest
from pdf_factory import corrupt_pdf, encrypted_pdf, not_a_pdf, rich_pdf, scanned_pdf, text_pdf, zero_page_pdf

from trident_local.docs.ingest import ingest_pdf
from trident_local.docs.model import Document
from trident_local.errors import IngestError


@pytest.fixture(scope="module")
def rich_doc(tmp_path_factory) -> Document:
    return ingest_pdf(rich_pdf(tmp_path_factory.mktemp("pdf") / "report.pdf"))


def test_document_basics(rich_doc: Document) -> None:
    assert rich_doc.n_pages == 3 and len(rich_doc.pages) == 3
    assert [p.number for p in rich_doc.pages] == [1, 2, 3]
    assert len(rich_doc.doc_id) == 16
    assert "solar report" in rich_doc.title
    assert rich_doc.pages[0].blocks and rich_doc.pages[0].blocks[0].font_size > 0


def test_table_object_with_caption_and_cells(rich_doc: Document) -> None:
    tables = rich_doc.objects("table")
    assert len(tables) == 1
    t = tables[0]
    assert t.object_id == "p2:table:1" and t.page == 2 and t.label == "Table 1"
    assert "Capacity by region" in t.caption
    assert "South | 2,480 | 2,900" in t.text


def test_figure_object_with_caption(rich_doc: Document) -> None:
    figs = rich_doc.objects("figure")
    assert [f.object_id for f in figs] == ["p3:figure:1"]
    assert figs[0].label == "Figure 2" and "Output growth" in figs[0].caption
    x0, y0, x1, y1 = figs[0].bbox
    assert x1 > x0 and y1 > y0


def test_equation_and_citations(rich_doc: Document) -> None:
    eqs = rich_doc.objects("equation")
    assert eqs and eqs[0].label == "(1)" and "=" in eqs[0].text
    cites = [o.text for o in rich_doc.objects("citation_context")]
    assert any("[3]" in c for c in cites)
    assert any("Smith et al., 2019" in c for c in cites)


def test_section_paths_from_headings(rich_doc: Document) -> None:
    assert rich_doc.pages[1].section_path[-1] == "3 Results"
    assert rich_doc.pages[2].section_path[-1] == "4 Discussion"


def test_section_paths_from_outline(tmp_path) -> None:
    import pymupdf

    path = text_pdf(tmp_path / "toc.pdf", ["intro text here " * 5, "methods text here " * 5, "more methods " * 5])
    d = pymupdf.open(path)
    d.set_toc([[1, "Intro", 1], [1, "Methods", 2], [2, "Data", 3]])
    d.saveIncr()
    doc = ingest_pdf(path)
    assert [p.section_path for p in doc.pages] == [["Intro"], ["Methods"], ["Methods", "Data"]]


@pytest.mark.parametrize(
    "maker,reason",
    [
        (corrupt_pdf, "corrupt PDF"),
        (encrypted_pdf, "encrypted PDF"),
        (zero_page_pdf, "no pages"),
        (not_a_pdf, "not a PDF"),
    ],
)
def test_bad_input_gives_one_line_error_naming_the_file(tmp_path, maker, reason) -> None:
    path = maker(tmp_path / "bad.pdf")
    with pytest.raises(IngestError) as e:
        ingest_pdf(path)
    msg = str(e.value)
    assert str(path) in msg and reason in msg and "\n" not in msg


def test_empty_file(tmp_path) -> None:
    p = tmp_path / "empty.pdf"
    p.write_bytes(b"")
    with pytest.raises(IngestError, match="empty file"):
        ingest_pdf(p)


def test_scanned_page_without_ocr_is_image_only(tmp_path) -> None:
    doc = ingest_pdf(scanned_pdf(tmp_path / "scan.pdf"), ocr=None)
    assert doc.pages[0].image_only and not doc.pages[0].text
    assert any("image-only" in w for w in doc.warnings)


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract not installed")
def test_scanned_page_is_ocred(tmp_path) -> None:
    from trident_local.models.profiles import build_model

    doc = ingest_pdf(scanned_pdf(tmp_path / "scan.pdf"), ocr=build_model("ocr", "tesseract"))
    page = doc.pages[0]
    assert page.ocr and not page.image_only
    assert "4812" in page.text and "INVOICE" in page.text.upper()


def test_document_json_round_trip(rich_doc: Document) -> None:
    import json

    again = Document.from_dict(json.loads(json.dumps(rich_doc.to_dict())))
    assert again == rich_doc


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract not installed")
def test_a_scanned_page_keeps_the_ocr_line_boxes_so_its_values_have_regions(tmp_path) -> None:
    from trident_local.models.profiles import build_model
    from trident_local.regions import page_layout, value_regions

    pdf = scanned_pdf(tmp_path / "scan.pdf")  # the text is drawn at y 150/400 of an image placed at 20..180 pt
    page = ingest_pdf(pdf, ocr=build_model("ocr", "tesseract")).pages[0]
    assert page.ocr and page.blocks == [] and page.ocr_blocks  # OCR gives no font sizes: kept apart
    assert page.text == "\n\n".join(b.text for b in page.ocr_blocks)
    (cell,) = value_regions(page_layout(pdf, 1, page.ocr_blocks, (page.width, page.height)), "4812", "invoice total")
    x0, y0, x1, y1 = cell.bbox
    assert "4812" in cell.text and 20 <= x0 < x1 <= 575 and 70 < y0 < y1 < 120  # where the text is on the page
