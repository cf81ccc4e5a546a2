"""Small PDFs generated for tests: text with headings, a ruled table, a figure, an equation,
citations; plus broken inputs (corrupt, encrypted, zero pages, not a PDF, scanned)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import pymupdf
from PIL import Image, ImageDraw

if TYPE_CHECKING:
    from trident_local.index import Index

CSS = "h1{font-size:18pt;font-weight:bold} h2{font-size:13pt;font-weight:bold} td,th{border:1px solid black}"


def _png(w: int = 300, h: int = 200, text: str = "") -> bytes:
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    d.rectangle([20, 60, 80, h - 20], fill=(30, 80, 160))
    d.rectangle([120, 100, 180, h - 20], fill=(30, 80, 160))
    if text:
        d.text((10, 10), text, fill="black")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def rich_pdf(path: Path, *, topic: str = "solar", pages: int = 3) -> Path:
    """A report with sections, a ruled table (page 2), a figure with caption (page 3) and citations."""
    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_htmlbox(pymupdf.Rect(50, 50, 545, 790), f"""
<h1>The {topic} report</h1><h2>1 Introduction</h2>
<p>This report studies {topic} energy adoption in 2021. Prior work measured costs [3] and adoption
(Smith et al., 2019). The installed capacity reached 4,210 megawatts.</p>
<h2>2 Method</h2><p>We fit the model</p><p style="text-align:center">y = &#945; x + &#946; &nbsp;&nbsp; (1)</p>
""", css=CSS)
    p = doc.new_page()
    p.insert_htmlbox(pymupdf.Rect(50, 50, 545, 790), f"""
<h2>3 Results</h2><p>Table 1: Capacity by region for {topic}</p>
<table><tr><th>Region</th><th>2020</th><th>2021</th></tr>
<tr><td>North</td><td>1,020</td><td>1,310</td></tr><tr><td>South</td><td>2,480</td><td>2,900</td></tr></table>
<p>The South region led with 2,900 megawatts.</p>""", css=CSS)
    p = doc.new_page()
    p.insert_htmlbox(pymupdf.Rect(50, 50, 545, 200), f"<h2>4 Discussion</h2><p>Figure 2 plots growth of {topic} output.</p>", css=CSS)
    p.insert_image(pymupdf.Rect(100, 220, 450, 450), stream=_png())
    p.insert_htmlbox(pymupdf.Rect(50, 460, 545, 500), "<p>Figure 2: Output growth per year.</p>", css=CSS)
    for i in range(3, pages):
        p = doc.new_page()
        p.insert_htmlbox(pymupdf.Rect(50, 50, 545, 790), f"<p>Appendix page {i + 1} about {topic} maintenance "
                         f"schedules and inspection number {i * 17}.</p>", css=CSS)
    doc.save(path)
    return path


def text_pdf(path: Path, texts: list[str]) -> Path:
    doc = pymupdf.open()
    for t in texts:
        doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 545, 790), t, fontsize=11)
    doc.save(path)
    return path


def scanned_pdf(path: Path, text: str = "SCANNED INVOICE TOTAL 4812") -> Path:
    """A page that is only an image of text (no text layer)."""
    img = Image.new("RGB", (1400, 400), "white")
    ImageDraw.Draw(img).text((40, 150), text, fill="black", font_size=64)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    doc = pymupdf.open()
    doc.new_page().insert_image(pymupdf.Rect(20, 20, 575, 180), stream=buf.getvalue())
    doc.save(path)
    return path


def encrypted_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")
    return path


def corrupt_pdf(path: Path) -> Path:
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage garbage\n%%EOF")
    return path


def zero_page_pdf(path: Path) -> Path:
    """A syntactically valid PDF whose page tree is empty."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def not_a_pdf(path: Path) -> Path:
    path.write_text("just some notes, not a PDF\n")
    return path


def statement_page(doc: pymupdf.Document, title: str, rows: list[tuple[str, str, str]], *,
                   scale: str = "", years: tuple[str, str] = ("2019", "2018")) -> pymupdf.Page:
    """A page of a filing's statement: its title (and unit line), a heading row of two years, and rows
    of a label and a value under each year."""
    page = doc.new_page()
    page.insert_text((200, 60), title, fontsize=11)
    if scale:
        page.insert_text((200, 76), scale, fontsize=9)
    page.insert_text((420, 100), years[0], fontsize=9)
    page.insert_text((500, 100), years[1], fontsize=9)
    for i, (label, a, b) in enumerate(rows):
        y = 120 + 16 * i
        page.insert_text((40, y), label, fontsize=9)
        page.insert_text((410, y), a, fontsize=9)
        page.insert_text((490, y), b, fontsize=9)
    return page


def indexed(root: Path, *pdfs: Path) -> Index:
    """A new index under ``root`` holding ``pdfs``, answering without a chat model."""
    from trident_local.index import Index

    idx = Index.create(root / "index")
    idx.add(list(pdfs), workers=1)
    idx.models.use_profile("chat", "none")
    return idx


def acme_filing(path: Path, *, discussion: str = "", balance_scale: str = "(in millions)") -> Path:
    """A small filing: an income statement (in millions) and a balance sheet (``balance_scale``; "(in
    thousands)" prints its values in thousands), after a page of ``discussion`` where one is given."""
    thousands = "thousands" in balance_scale
    doc = pymupdf.open()
    if discussion:
        doc.new_page().insert_textbox(pymupdf.Rect(40, 60, 560, 400), discussion, fontsize=10)
    statement_page(doc, "Acme Company Consolidated Statements of Income", [
        ("Net sales", "24,977", "26,268"), ("Cost of products sold", "16,830", "17,347"),
        ("Gross profit", "8,147", "8,921")], scale="(in millions)")
    statement_page(doc, "Acme Company Consolidated Balance Sheets", [
        (label, *(f"{v},000" if thousands else v for v in values)) for label, *values in (
            ("Cash and cash equivalents", "2,279", "1,130"), ("Inventories", "2,721", "2,667"),
            ("Total current assets", "7,000", "6,000"))], scale=balance_scale)
    doc.save(path)
    return path
