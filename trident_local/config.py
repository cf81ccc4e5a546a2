"""One typed config per index. Profiles pick a backend per model role; "none" picks each
stage's rule-based no-model strategy (the embedded CPU default)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

DEFAULT_POOLS = ("bm25", "dense")


@dataclass
class Config:
    embedder: str = "minilm"  # text embedder profile (dense pool, concepts)
    chat: str = "none"  # chat / VLM profile for annotation, rerank, answers, verification
    multivector: str = "none"  # ColPali-style page embedder profile; "none" = no colpali pool
    ocr: str = "tesseract"  # OCR profile for pages without a text layer; "none" = image-only
    pools: list[str] = field(default_factory=lambda: list(DEFAULT_POOLS))  # built at index time
    dpi: int = 144  # page rendering
    chunk_words: int = 160  # dense passages: words per window
    chunk_stride: int = 120  # words between window starts
    pool_size: int = 20  # M: candidates handed to the reranker
    k_max: int = 5  # most pages an answer cites

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Config:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})
