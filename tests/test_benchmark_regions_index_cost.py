"""benchmarks/regions_index_cost.py: its 'without' arm really indexes without line boxes, and restores them."""

from __future__ import annotations

from pathlib import Path

from benchmark_module import load
from pdf_factory import text_pdf

from trident_local.docs.ingest import ingest_pdf
from trident_local.models.backends.tesseract_ocr import TesseractOCR


def test_the_without_arm_drops_the_line_boxes_and_puts_them_back(tmp_path: Path) -> None:
    bench = load("regions_index_cost")
    pdf = text_pdf(tmp_path / "a.pdf", ["Revenue grew to 95.2 million dollars in 2023."])
    assert any(b.lines for p in ingest_pdf(pdf).pages for b in p.blocks)
    with bench.without_line_boxes():
        assert not any(b.lines for p in ingest_pdf(pdf).pages for b in p.blocks)
        assert not hasattr(TesseractOCR, "ocr_lines")  # scanned pages are read by plain OCR
    assert any(b.lines for p in ingest_pdf(pdf).pages for b in p.blocks)
    assert hasattr(TesseractOCR, "ocr_lines")
