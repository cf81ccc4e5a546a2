"""The no-model visual caption: composed from the page's detected objects, their captions and its layout.

It says what a reader would see at a glance (how many tables and figures, their
labels and captions, whether the page is mostly image, a slide or dense text)
in at most 60 words, so the reranker's "visual" field is never empty on CPU.
"""

from __future__ import annotations

from trident_local.docs.model import Page

MAX_WORDS = 60


def cut_words(text: str, n: int = MAX_WORDS) -> str:
    w = text.split()
    return " ".join(w) if len(w) <= n else " ".join(w[:n]) + " ..."


def _table_shape(text: str) -> str:
    rows = [r for r in text.splitlines() if r.strip()]
    if not rows:
        return ""
    cols = max(len(r.split(" | ")) for r in rows)
    header = ", ".join(c for c in rows[0].split(" | ") if c)[:80]
    return f"{len(rows)}x{cols}" + (f", header: {header}" if header else "")


def layout_phrase(page: Page) -> str:
    n_words = len(page.text.split())
    if page.image_only:
        return "image-only page (no text layer)"
    if page.ocr:
        return "scanned page (text from OCR)"
    if n_words < 60 and page.n_images:
        return "slide-like page, mostly images"
    if n_words < 120:
        return "sparse text page"
    return "dense text page"


def object_caption(page: Page) -> str:
    """<= 60 words describing visible tables, figures, equations and the layout."""
    parts: list[str] = []
    tables = [o for o in page.objects if o.type == "table"]
    figures = [o for o in page.objects if o.type == "figure"]
    equations = [o for o in page.objects if o.type == "equation"]
    for t in tables:
        label = t.label or "Table"
        desc = (
            t.caption[len(t.label) :].strip(" :.") if t.caption.startswith(t.label) and t.label else t.caption
        )
        shape = _table_shape(t.text)
        parts.append(f"{label}" + (f": {desc}" if desc else "") + (f" ({shape})" if shape else ""))
    for f in figures:
        label = f.label or "Figure"
        desc = (
            f.caption[len(f.label) :].strip(" :.") if f.caption.startswith(f.label) and f.label else f.caption
        )
        parts.append(f"{label}" + (f": {desc}" if desc else ""))
    if equations:
        parts.append(f"{len(equations)} equation(s)")
    uncaptioned = page.n_images - sum(1 for f in figures if f.caption)
    if uncaptioned > 0 and not figures:
        parts.append(f"{page.n_images} image(s)")
    parts.append(layout_phrase(page))
    return cut_words("; ".join(parts))
