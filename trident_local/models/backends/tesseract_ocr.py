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

    def _tesseract(self):
        if not self.available():
            raise TridentError(
                f"tesseract OCR needs the `{self.binary}` binary: install it "
                "(Debian/Ubuntu: apt-get install tesseract-ocr tesseract-ocr-eng)"
            )
        import pytesseract

        pytesseract.pytesseract.tesseract_cmd = shutil.which(self.binary) or self.binary
        return pytesseract

    def ocr(self, image: Image.Image) -> str:
        pytesseract = self._tesseract()
        try:
            return pytesseract.image_to_string(
                image.convert("RGB"), lang=self.lang, config=f"--psm {self.psm}", timeout=self.timeout_s
            )
        except RuntimeError as e:  # pytesseract raises RuntimeError on timeout
            raise TridentError(f"tesseract timed out after {self.timeout_s:.0f} s") from e
        except pytesseract.TesseractError as e:
            raise TridentError(f"tesseract failed: {e}") from e

    def ocr_lines(self, image: Image.Image) -> list[list[tuple[str, tuple[int, int, int, int]]]]:
        """The text as blocks of lines, each line with its box in image pixels (x0, y0, x1, y1): one
        tesseract run gives both the text and where each line is, so a scanned page has regions too."""
        pytesseract = self._tesseract()
        try:
            data = pytesseract.image_to_data(
                image.convert("RGB"), lang=self.lang, config=f"--psm {self.psm}", timeout=self.timeout_s,
                output_type=pytesseract.Output.DICT,
            )
        except RuntimeError as e:
            raise TridentError(f"tesseract timed out after {self.timeout_s:.0f} s") from e
        except pytesseract.TesseractError as e:
            raise TridentError(f"tesseract failed: {e}") from e
        lines: dict[tuple[int, int, int], list[int]] = {}
        for i, word in enumerate(data["text"]):
            if word and word.strip():
                lines.setdefault((data["block_num"][i], data["par_num"][i], data["line_num"][i]), []).append(i)
        blocks: dict[int, list[tuple[str, tuple[int, int, int, int]]]] = {}
        for (block, _, _), idx in sorted(lines.items()):
            x0 = min(data["left"][i] for i in idx)
            y0 = min(data["top"][i] for i in idx)
            x1 = max(data["left"][i] + data["width"][i] for i in idx)
            y1 = max(data["top"][i] + data["height"][i] for i in idx)
            blocks.setdefault(block, []).append((" ".join(data["text"][i].strip() for i in idx), (x0, y0, x1, y1)))
        return list(blocks.values())
