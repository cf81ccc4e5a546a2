"""One protocol per model role, and the small dataclasses that cross them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from PIL import Image


@dataclass
class ImagePart:
    """An image inside a chat message: an in-memory PIL image or a path to a PNG/JPEG."""

    image: Image.Image | None = None
    path: str | None = None

    def load(self) -> Image.Image:
        if self.image is not None:
            return self.image
        if self.path is None:
            raise ValueError("ImagePart needs an image or a path")
        from PIL import Image as _Image

        with _Image.open(self.path) as im:
            return im.convert("RGB")


ContentPart = str | ImagePart


@dataclass
class Message:
    role: Literal["system", "user", "assistant"]
    content: str | list[ContentPart]

    def parts(self) -> list[ContentPart]:
        return [self.content] if isinstance(self.content, str) else list(self.content)

    def text(self) -> str:
        return "".join(p for p in self.parts() if isinstance(p, str))

    def images(self) -> list[ImagePart]:
        return [p for p in self.parts() if isinstance(p, ImagePart)]


@dataclass
class SamplingParams:
    """Backend-neutral sampling parameters (greedy by default: runs are reproducible)."""

    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    stop: list[str] | None = None


@dataclass
class ChatRequest:
    messages: list[Message]
    params: SamplingParams = field(default_factory=SamplingParams)
    json_schema: dict[str, Any] | None = None  # constrain output where the backend can
    tag: str = ""  # caller's label, carried through for statistics


@dataclass
class ChatResult:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    error: str | None = None  # set when this one request failed; the batch still returns


@runtime_checkable
class ChatModel(Protocol):
    """Text (and, where ``supports_images``, images) in; text out. Requests are sent as one batch."""

    name: str
    supports_images: bool
    supports_json_schema: bool

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]: ...


@runtime_checkable
class TextEmbedder(Protocol):
    """Dense text embeddings, L2-normalised float32 rows (inner product = cosine)."""

    name: str
    dim: int
    max_tokens: int
    passage_overhead: int  # tokens every passage costs beyond its words (special tokens, prefix)

    def word_tokens(self, words: Sequence[str]) -> list[int]:
        """Tokens each word costs under the model's tokenizer: what token windows are cut by."""
        ...

    def encode(
        self,
        texts: Sequence[str],
        *,
        kind: Literal["query", "passage"] = "passage",
        batch_size: int = 32,
        show_progress: bool = False,
    ) -> np.ndarray: ...


@runtime_checkable
class SparseEncoder(Protocol):
    """Lexical weights per text: {token: weight}."""

    name: str

    def encode_sparse(self, texts: Sequence[str], *, batch_size: int = 32) -> list[dict[str, float]]: ...


@runtime_checkable
class MultiVectorEmbedder(Protocol):
    """Per-token vectors for page images and queries (ColPali-style late interaction)."""

    name: str
    dim: int

    def embed_images(
        self, images: Iterable[Image.Image], *, batch_size: int = 4, show_progress: bool = False
    ) -> list[np.ndarray]: ...

    def embed_queries(self, queries: Sequence[str], *, batch_size: int = 16) -> list[np.ndarray]: ...


@runtime_checkable
class OCREngine(Protocol):
    name: str

    def available(self) -> bool: ...

    def ocr(self, image: Image.Image) -> str: ...
