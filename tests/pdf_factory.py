"""Small PDFs generated for tests: text with headings, a ruled table, a figure, an equation,
citations; plus broken inputs (corrupt, encrypted, zero pages, not a PDF, scanned)."""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf
from PIL import Image, ImageDraw

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
