"""OCR with the tesseract binary through pytesseract."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from trident_local.errors import TridentError

if TYPE_CHECKING:
    from PIL import Image


class TesseractOCR:
    """`OCREngine` over tesseract; ``available()`` is False when the binary is missing."""

    def __init__(
        self,
        *,
        name: str = "tesseract",
        lang: str = "eng",
        psm: int = 3,
        binary: str = "tesseract",
        timeout_s: float = 120.0,
    ) -> None:
        self.name = name
        self.lang = lang
        self.psm = psm
        self.binary = binary
        self.timeout_s = timeout_s

    def available(self) -> bool:
        return shutil.which(self.binary) is not None

    def ocr(self, image: Image.Image) -> str:
        if not self.available():
            raise TridentError(
                f"tesseract OCR needs the `{self.binary}` binary: install it "
                "(Debian/Ubuntu: apt-get install tesseract-ocr tesseract-ocr-eng)"
            )
        import pytesseract

        pytesseract.pytesseract.tesseract_cmd = shutil.which(self.binary) or self.binary
        try:
            return pytesseract.image_to_string(
                image.convert("RGB"), lang=self.lang, config=f"--psm {self.psm}", timeout=self.timeout_s
            )
        except RuntimeError as e:  # pytesseract raises RuntimeError on timeout
            raise TridentError(f"tesseract timed out after {self.timeout_s:.0f} s") from e
        except pytesseract.TesseractError as e:
            raise TridentError(f"tesseract failed: {e}") from e
