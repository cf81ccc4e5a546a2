"""Dense text embeddings with sentence-transformers (default: the packaged all-MiniLM-L6-v2)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from trident_kernels.cpu_features import cpu_has_fast_bf16
from trident_local.errors import TridentError
from trident_local.models.backends._device import gpu_device_nodes, pick_device
from trident_local.models.backends._loaded import load_once
from trident_local.models.backends._tokens import WordTokenCounter

log = logging.getLogger(__name__)


def load_sentence_transformer(model: str, device: str = "auto") -> Any:
    """Load once per process and device: several pools and stages share one copy."""
    dev = pick_device(device)

    def load() -> Any:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(model), device=dev, local_files_only=True)

    return load_once(("sentence-transformers", str(model), dev), load)


def autocast_dtype(dtype: str, device: str) -> str | None:
    """The autocast dtype for ``encode`` ("bfloat16"/"float16"), or None for plain float32.

    "auto": bfloat16 on CUDA and on CPUs with native bf16, float32 elsewhere. The
    embeddings differ from float32 by a cosine of about 1e-4, below what moves a ranking.
    "int8" is an OpenVINO precision (:func:`openvino_precision`); torch, where it runs
    instead, uses what "auto" would.
    """
    name = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "": "auto"}.get(dtype or "", dtype)
    if name in ("auto", "int8"):
        return "bfloat16" if device.startswith("cuda") or (device == "cpu" and cpu_has_fast_bf16()) else None
    if name == "float32":
        return None
    if name in ("bfloat16", "float16"):
        return name
    raise ValueError(f"unknown embedder dtype {dtype!r}; use auto, bfloat16, float16, float32 or int8")


def openvino_precision(dtype: str, autocast: str | None) -> str:
    """OpenVINO's precision for the profile's dtype: int8 when asked, else bf16 where torch would
    autocast to bf16, else f32 (f16 is a GPU format; on CPU it means f32)."""
    if dtype == "int8":
        return "int8"
    return "bf16" if autocast == "bfloat16" else "f32"


RUNTIMES = ("auto", "torch", "openvino")


def _openvino_encoder(st: Any, model: str, runtime: str, device: str, precision: str) -> Any:
    """The OpenVINO encoder when ``runtime`` asks for it (or "auto" on a CPU where OpenVINO imports), else None.

    "openvino" that cannot be honoured is an error; "auto" falls back to torch: silently when OpenVINO is
    not installed, with a warning when it is but cannot run this model."""
    if runtime not in RUNTIMES:
        raise TridentError(f"unknown embedder runtime {runtime!r}; use {', '.join(RUNTIMES)}")
    if runtime == "torch" or (runtime == "auto" and not device.startswith("cpu")):
        return None
    from trident_local.models.backends import openvino_encoder as ove

    if not device.startswith("cpu") or not ove.openvino_available():
        if runtime == "openvino":
            raise TridentError("embedder runtime 'openvino' needs the openvino package and a CPU device "
                               f"(device is {device!r}); pip install openvino, or use runtime 'torch'")
        return None
    try:
        return ove.OpenVINOEncoder(st, model, precision=precision, cache=ove.cache_root())
    except Exception as e:
        if runtime == "openvino":
            raise TridentError(f"OpenVINO could not run this embedder: {e}") from e
        log.warning("OpenVINO could not run the embedder (%s); using torch", e)
        return None


def _cached_openvino_encoder(model: str, runtime: str, device: str, dtype: str) -> Any:
    """The torch-free OpenVINO encoder when the device is surely the CPU and the cache holds a
    checked conversion of this model in this precision (written by an earlier full load); else None."""
    if runtime not in ("auto", "openvino") or not (device == "cpu" or (device == "auto" and not gpu_device_nodes())):
        return None
    from trident_local.models.backends import openvino_encoder as ove

    if not ove.openvino_available():
        return None
    precision = openvino_precision(dtype, autocast_dtype(dtype, "cpu"))
    return ove.CachedEncoder.load(model, precision, ove.cache_root())


class SentenceTransformerEmbedder:
    """`TextEmbedder` over a local sentence-transformers folder; rows are L2-normalised float32."""

    def __init__(
        self,
        model: str,
        *,
        name: str = "sentence-transformers",
        device: str = "auto",
        dtype: str = "auto",
        query_prefix: str = "",
        passage_prefix: str = "",
        max_tokens: int | None = None,
        runtime: str = "auto",
    ) -> None:
        self.name = name
        self._prefix = {"query": query_prefix, "passage": passage_prefix}
        self._ov: Any = _cached_openvino_encoder(model, runtime, device, dtype)
        if self._ov is not None:  # neither torch nor sentence-transformers is loaded
            self._model, self._device = None, "cpu"
            self.autocast = autocast_dtype(dtype, "cpu")
            self.dim, self.max_tokens = self._ov.dim, int(max_tokens or self._ov.max_seq_length)
        else:
            self._model = load_sentence_transformer(model, device)
            self._device = str(self._model.device)
            self.autocast = autocast_dtype(dtype, self._device.split(":")[0])
            self._ov = _openvino_encoder(self._model, model, runtime, self._device,
                                         openvino_precision(dtype, self.autocast))
            self.dim = int(self._model.get_embedding_dimension())
            self.max_tokens = int(max_tokens or self._model.max_seq_length)
        self.runtime = f"openvino ({self._ov.precision})" if self._ov is not None else "torch"
        tok = self._model.tokenizer if self._model is not None else self._ov.tokenizer
        self._counter = WordTokenCounter(getattr(tok, "backend_tokenizer", tok))
        self.passage_overhead = self._counter.specials + self._counter.text_tokens(passage_prefix)

    def word_tokens(self, words: Sequence[str]) -> list[int]:
        """Tokens each word costs under this model's tokenizer (for windows that fit ``max_tokens``)."""
        return self._counter(words)

    def _precision(self):
        if self.autocast is None:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(self._device.split(":")[0], dtype=getattr(torch, self.autocast))

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
        if self._ov is not None:
            return self._ov.encode([prefix + t for t in texts], batch_size=batch_size)
        with self._precision():
            emb = self._model.encode(
                [prefix + t for t in texts],
                batch_size=batch_size,
                show_progress_bar=show_progress,
                normalize_embeddings=True,
                convert_to_numpy=True,
            )
        return np.ascontiguousarray(emb, dtype=np.float32)
