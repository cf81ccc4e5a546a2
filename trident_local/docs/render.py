"""Page images, rendered lazily and cached as PNG files."""

from __future__ import annotations

from pathlib import Path

from trident_local.docs.pdf_open import open_pdf
from trident_local.store.atomic import atomic_write_bytes

DEFAULT_DPI = 144


def render_page(pdf_path: str | Path, page: int, out: Path, *, dpi: int = DEFAULT_DPI) -> Path:
    """Render 1-based ``page`` of ``pdf_path`` to ``out`` (PNG) unless it is already there."""
    if out.exists():
        return out
    pdf = open_pdf(pdf_path)
    try:
        pix = pdf[page - 1].get_pixmap(dpi=dpi, alpha=False)
        atomic_write_bytes(out, pix.tobytes("png"))
    finally:
        pdf.close()
    return out
