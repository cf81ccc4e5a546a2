"""Dense text embeddings with sentence-transformers (default: the packaged all-MiniLM-L6-v2)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from trident_local.models.backends._device import pick_device

_CACHE: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def load_sentence_transformer(model: str, device: str = "auto") -> Any:
    """Load once per process and device: several pools and stages share one copy."""
    dev = pick_device(device)
    key = (str(model), dev)
    with _LOCK:
        if key not in _CACHE:
            from sentence_transformers import SentenceTransformer

            _CACHE[key] = SentenceTransformer(str(model), device=dev, local_files_only=True)
        return _CACHE[key]


class SentenceTransformerEmbedder:
    """`TextEmbedder` over a local sentence-transformers folder; rows are L2-normalised float32."""

    def __init__(
        self,
        model: str,
        *,
        name: str = "sentence-transformers",
        device: str = "auto",
        query_prefix: str = "",
        passage_prefix: str = "",
        max_tokens: int | None = None,
    ) -> None:
        self.name = name
        self._model = load_sentence_transformer(model, device)
        self.dim = int(self._model.get_embedding_dimension())
        self.max_tokens = int(max_tokens or self._model.max_seq_length)
        self._prefix = {"query": query_prefix, "passage": passage_prefix}

    def encode(
        self,
        texts: Sequence[str],
        *,
        kind: Literal["query", "passage"] = "passage",
        batch_size: int = 32,
        show_progress: bool = False,
    ) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefix = self._prefix[kind]
        emb = self._model.encode(
            [prefix + t for t in texts],
            batch_size=batch_size,
            show_progress_bar=show_progress,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        return np.ascontiguousarray(emb, dtype=np.float32)
