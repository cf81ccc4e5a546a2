"""Page images, rendered lazily and cached as PNG files."""

from __future__ import annotations

from pathlib import Path

from trident_local.atomic import atomic_write_bytes
from trident_local.docs.pdf_open import open_pdf
from trident_local.errors import TridentError

DEFAULT_DPI = 144
# A Letter page at 144 dpi is 1.9 Mpx; a poster or a 20,000 pt page is drawn at a lower dpi
# rather than asking MuPDF for gigabytes (it refuses past about 2 GiB, an error, not an image).
MAX_PIXELS = 16_000_000


def render_dpi(width_pt: float, height_pt: float, dpi: int, max_pixels: int = MAX_PIXELS) -> int:
    """``dpi`` lowered so the page is at most ``max_pixels`` (never below 1)."""
    area = max(width_pt * height_pt, 1.0) / 72.0**2
    return max(1, min(dpi, int((max_pixels / area) ** 0.5)))


def render_page(pdf_path: str | Path, page: int, out: Path, *, dpi: int = DEFAULT_DPI) -> Path:
    """Render 1-based ``page`` of ``pdf_path`` to ``out`` (PNG) unless it is already there.

    Raises TridentError (a clear message, not MuPDF's) when the page cannot be drawn."""
    if out.exists():
        return out
    pdf = open_pdf(pdf_path)
    try:
        pg = pdf[page - 1]
        pix = pg.get_pixmap(dpi=render_dpi(pg.rect.width, pg.rect.height, dpi), alpha=False)
        atomic_write_bytes(out, pix.tobytes("png"))
    except (RuntimeError, ValueError, MemoryError) as e:  # MuPDF's FzError* are RuntimeErrors
        raise TridentError(f"page {page} of {Path(pdf_path).name} cannot be drawn "
                           f"({type(e).__name__}: {str(e).strip()[:200]})") from None
    finally:
        pdf.close()
    return out
