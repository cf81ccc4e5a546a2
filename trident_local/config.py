"""One typed config per index. Profiles pick a backend per model role; "none" picks each
stage's rule-based no-model strategy (the embedded CPU default)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from trident_local.windows import WindowSpec

DEFAULT_POOLS = ("bm25", "dense")


@dataclass
class Config:
    embedder: str = "minilm"  # text embedder profile (dense pool, concepts)
    chat: str = "none"  # chat / VLM profile for annotation, rerank, answers, verification
    multivector: str = "none"  # ColPali-style page embedder profile; "none" = no colpali pool
    ocr: str = "tesseract"  # OCR profile for pages without a text layer; "none" = image-only
    pools: list[str] = field(default_factory=lambda: list(DEFAULT_POOLS))  # built at index time
    rrf_members: list[str] = field(default_factory=lambda: list(DEFAULT_POOLS))  # what pool "rrf" fuses
    dpi: int = 144  # page rendering
    chunk_words: int = 160  # dense passages: words per window
    # words between window starts: windows side by side. An overlap of 40 words (stride 120) cost 16%
    # more windows on the public subset for no retrieval gain (docs/INDEX.md#dense-passages; benchmarks/README.md).
    # An index keeps the stride it was built with.
    chunk_stride: int = 160
    # dense passages cut by the embedder's tokens instead: windows of at most this many (special
    # tokens included, capped at the model's maximum), side by side. 0 = the word windows above,
    # what an index written before this field keeps (Config.from_stored).
    chunk_tokens: int = 128
    # dense passages leave English stop words out: 18% fewer windows to embed on the public
    # subset, retrieval unchanged (docs/INDEX.md#dense-passages; benchmarks/README.md). An index written before
    # this field embeds every word (Config.from_stored).
    chunk_drop_stop_words: bool = True
    pool_size: int = 20  # M: candidates handed to the reranker
    k_max: int = 5  # most pages an answer cites

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Config:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    @classmethod
    def from_stored(cls, d: dict[str, Any]) -> Config:
        """An index's saved config: a field the index was written without keeps the behaviour the
        index was built with, not today's default."""
        return cls.from_dict({**BEFORE_FIELD, **d})

    def windows(self) -> WindowSpec:
        """How this index cuts page text for its embedder."""
        return WindowSpec(self.chunk_words, self.chunk_stride, self.chunk_tokens, self.chunk_drop_stop_words)


# What an index saved before a field existed did, where that differs from the field's default.
BEFORE_FIELD: dict[str, Any] = {"chunk_tokens": 0, "chunk_drop_stop_words": False}


@dataclass
class IndexOptions:
    """Options given when indexing; None = not given. Applied to a new index's config, or merged
    into an existing one's: new pools are added (their per-document stage then runs for every
    document), a different embedder is refused (it would mix vectors of two models)."""

    pools: list[str] | None = None
    embedder: str | None = None
    ocr: str | None = None
    multivector: str | None = None

    def apply(self, config: Config) -> Config:
        """A new index's config: the options over the defaults."""
        out = Config.from_dict(config.to_dict())
        if self.pools:
            out.pools = list(self.pools)
        if self.embedder:
            out.embedder = self.embedder
        if self.ocr:
            out.ocr = self.ocr
        if self.multivector:
            out.multivector = self.multivector
            if "colpali" not in out.pools:
                out.pools.append("colpali")
        return out

    def merge(self, config: Config) -> Config:
        """An existing index's config with the options merged in."""
        from trident_local.errors import TridentError

        if self.embedder and self.embedder != config.embedder:
            raise TridentError(f"the index was built with embedder {config.embedder!r}; "
                               f"index into a new directory to use {self.embedder!r}")
        out = Config.from_dict(config.to_dict())
        if self.ocr:
            out.ocr = self.ocr
        pools = list(self.pools or [])
        if self.multivector:
            out.multivector = self.multivector
            pools = list(dict.fromkeys([*(pools or out.pools), "colpali"]))
        if pools:
            out.pools = list(dict.fromkeys([*out.pools, *pools]))
        return out
