"""BGE-M3 through FlagEmbedding: dense vectors, sparse lexical weights and ColBERT vectors.

One loaded model per (folder, device, fp16) serves both the ``embedder`` and
the ``sparse`` role, so asking for both costs one copy in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from trident_local.models.backends._device import pick_device
from trident_local.models.backends._loaded import load_once
from trident_local.models.backends._tokens import WordTokenCounter

# FlagEmbedding's outputs and the flag that asks for each
_OUTPUTS = {"dense_vecs": "return_dense", "lexical_weights": "return_sparse", "colbert_vecs": "return_colbert_vecs"}


def _load(model: str, device: str, fp16: bool) -> Any:
    def load() -> Any:
        from FlagEmbedding import BGEM3FlagModel

        return BGEM3FlagModel(model, use_fp16=fp16, devices=device, normalize_embeddings=True)

    return load_once(("bge-m3", model, device, fp16), load)


class BGEM3Encoder:
    """`TextEmbedder` and `SparseEncoder` over a local BGE-M3 folder (plus ``encode_colbert``)."""

    def __init__(
        self,
        model: str,
        *,
        name: str = "bge-m3",
        dtype: str = "auto",
        device: str = "auto",
        max_tokens: int = 8192,
        query_max_tokens: int = 512,
    ) -> None:
        self.name = name
        self.device = pick_device(device)
        fp16 = self.device.startswith("cuda") and dtype in ("auto", "float16", "fp16", "half")
        self._m = _load(str(model), self.device, fp16)
        hidden = self._m.model.model.config.hidden_size
        self.dim = int(hidden)
        pos = (
            int(getattr(self._m.model.model.config, "max_position_embeddings", 8194)) - 2
        )  # XLM-R offsets by 2
        self.max_tokens = min(int(max_tokens), pos)
        self.query_max_tokens = min(int(query_max_tokens), self.max_tokens)
        self._counter = WordTokenCounter(self._m.tokenizer.backend_tokenizer)
        self.passage_overhead = self._counter.specials

    def word_tokens(self, words: Sequence[str]) -> list[int]:
        """Tokens each word costs under the model's tokenizer (for windows that fit ``max_tokens``)."""
        return self._counter(words)

    def _encode(self, texts: Sequence[str], batch_size: int, max_len: int, output: str) -> Any:
        """FlagEmbedding's ``output`` ("dense_vecs", "lexical_weights" or "colbert_vecs") for ``texts``."""
        which = {flag: name == output for name, flag in _OUTPUTS.items()}
        # FlagEmbedding shrinks the batch on RuntimeError in a loop that never ends at 0; keep it >= 1.
        return self._m.encode(list(texts), batch_size=max(1, batch_size), max_length=max_len, **which)[output]

    def _max_len(self, kind: str) -> int:
        return self.query_max_tokens if kind == "query" else self.max_tokens

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
        out = self._encode(texts, batch_size, self._max_len(kind), "dense_vecs")
        return np.ascontiguousarray(np.asarray(out).reshape(len(texts), -1), dtype=np.float32)

    def encode_sparse(self, texts: Sequence[str], *, batch_size: int = 32) -> list[dict[str, float]]:
        """{token string: weight} per text (the model's lexical weights, special tokens dropped)."""
        if len(texts) == 0:
            return []
        out = self._encode(texts, batch_size, self.max_tokens, "lexical_weights")
        tok = self._m.tokenizer
        result: list[dict[str, float]] = []
        for weights in out:
            d: dict[str, float] = {}
            for tid, w in weights.items():
                token = tok.decode([int(tid)]).strip()
                if token:
                    d[token] = max(d.get(token, 0.0), float(w))
            result.append(d)
        return result

    def encode_colbert(
        self, texts: Sequence[str], *, kind: Literal["query", "passage"] = "passage", batch_size: int = 32
    ) -> list[np.ndarray]:
        """Per-token ColBERT vectors, float32 [n_tokens, dim] per text (L2-normalised rows)."""
        if len(texts) == 0:
            return []
        out = self._encode(texts, batch_size, self._max_len(kind), "colbert_vecs")
        return [np.ascontiguousarray(v, dtype=np.float32) for v in out]
