"""The transformer of a sentence-transformers model run by OpenVINO on CPU; the model's own modules pool.

Why: on a CPU the embedding is a large share of the cost of indexing. OpenVINO's CPU plugin runs
all-MiniLM-L6-v2 in bf16 on AMX / AVX512-BF16 with the same vectors (cosine >= 0.9999 to float32)
at 1.2x the windows per CPU-second of torch under bf16 autocast on an idle machine, and keeps its
rate when other processes compete for the cores, where torch's spinning OpenMP threads lose up to
two thirds of theirs (`benchmarks/embedding.py`; `trident index` 1.14x pages/s, 14% fewer CPU-s).
Only the transformer is converted (``openvino.convert_model`` from the loaded torch module, no
export tool or download); tokenising, pooling and normalising stay the sentence-transformers
modules of the model, so the vectors are the model's own; at load two check sentences must give
torch's float32 vectors (cosine >= 0.99), or the conversion is refused.

The converted model is cached as OpenVINO IR under ``$TRIDENT_CACHE_DIR`` (default
``~/.cache/trident_local``)/openvino, keyed by the weights and the library versions; it is written
to a temporary folder and renamed into place, so a killed process leaves no half-written model.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

MODEL_FILE = "model.xml"
MIN_COSINE = 0.99  # to torch float32 on the check sentences; bf16 gives >= 0.9999
CHECK_TEXTS = ["Revenue in the Coastal region rose to 95.2 million dollars in 2023.",
               "Which figure shows recall as the candidate pool grows?"]


def openvino_available() -> bool:
    try:
        import openvino  # noqa: F401
    except Exception:  # an import that fails for any reason means: use torch
        return False
    return True


def cache_root() -> Path:
    return Path(os.environ.get("TRIDENT_CACHE_DIR") or Path.home() / ".cache" / "trident_local") / "openvino"


def cache_key(model_dir: str | Path) -> str:
    """Changes when the weights (name, size, mtime) or the converting libraries change."""
    import openvino
    import torch
    import transformers

    h = hashlib.sha256()
    h.update(f"{openvino.__version__}|{torch.__version__}|{transformers.__version__}".encode())
    folder = Path(model_dir)
    if folder.is_dir():
        for f in sorted(folder.rglob("*")):
            if f.is_file() and f.suffix in (".json", ".safetensors", ".bin", ".txt"):
                st = f.stat()
                h.update(f"{f.relative_to(folder)}|{st.st_size}|{st.st_mtime_ns}".encode())
    else:
        h.update(str(folder).encode())
    return h.hexdigest()[:20]


def _tokenize(st: Any, texts: list[str]) -> dict[str, Any]:
    """sentence-transformers' own tokenisation (``preprocess`` since 5.x, ``tokenize`` before)."""
    fn = getattr(st, "preprocess", None) or st.tokenize
    return dict(fn(texts))


def _example_inputs(st: Any) -> dict[str, Any]:
    return _tokenize(st, ["an example sentence", "a second, somewhat longer example sentence"])


def _convert(st: Any) -> Any:
    import openvino as ov
    import torch

    feats = _example_inputs(st)
    names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in feats]
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # tracing reads config fields it then warns about: noise to a user
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about the model's Python branches: expected
            return ov.convert_model(st[0].auto_model, example_input={k: feats[k] for k in names})
    finally:
        hf_logging.set_verbosity(level)


def load_ir(core: Any, st: Any, model_dir: str | Path, cache: Path | None) -> Any:
    """The transformer as an OpenVINO model: from the cache when there, else converted (and cached)."""
    import openvino as ov

    if cache is None:
        return _convert(st)
    final = cache / cache_key(model_dir)
    if (final / MODEL_FILE).is_file():
        try:
            return core.read_model(str(final / MODEL_FILE))
        except Exception as e:  # a damaged cache entry: convert again and replace it
            log.warning("OpenVINO cache %s unreadable (%s); converting again", final, e)
            shutil.rmtree(final, ignore_errors=True)
    elif final.exists():  # an entry without its model (emptied by hand): replace it too
        shutil.rmtree(final, ignore_errors=True)
    model = _convert(st)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=cache))
        ov.save_model(model, str(tmp / MODEL_FILE), compress_to_fp16=False)
        try:
            os.replace(tmp, final)
        except OSError:  # another process cached it first
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:  # a read-only home is not an error: the model is simply not cached
        log.info("OpenVINO model not cached (%s)", e)
    return model


class OpenVINOEncoder:
    """``encode`` as sentence-transformers does it, with the transformer compiled by OpenVINO."""

    def __init__(self, st: Any, model_dir: str | Path, *, precision: str, cache: Path | None = None) -> None:
        import openvino as ov

        self._st = st
        self._tail = list(st)[1:]  # pooling, normalisation, ...: run as torch modules
        self.precision = precision
        core = ov.Core()
        model = load_ir(core, st, model_dir, cache)
        self._compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision})
        self._inputs = [i.get_any_name() for i in self._compiled.inputs]
        self._output = self._compiled.output(0)
        self._local = threading.local()  # an infer request per thread: a request is not thread-safe
        self._check()

    def _check(self) -> None:
        """Refuse a conversion whose vectors are not the model's (a profile's model of another kind)."""
        import torch

        with torch.no_grad():
            ref = np.asarray(self._st.encode(CHECK_TEXTS, normalize_embeddings=True), dtype=np.float32)
        cos = float((self.encode(CHECK_TEXTS) * ref).sum(1).min())
        if not cos >= MIN_COSINE:
            raise ValueError(f"its vectors differ from torch's (cosine {cos:.4f} < {MIN_COSINE})")

    def _request(self) -> Any:
        req = getattr(self._local, "request", None)
        if req is None:
            req = self._local.request = self._compiled.create_infer_request()
        return req

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 rows in the order of ``texts`` (batched longest first, as ST does)."""
        import torch

        order = np.argsort([-len(t) for t in texts], kind="stable")
        rows: np.ndarray | None = None
        req = self._request()
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            feats = _tokenize(self._st, [texts[i] for i in idx])
            res = req.infer({k: feats[k].numpy() for k in self._inputs})
            feats["token_embeddings"] = torch.from_numpy(np.asarray(res[self._output], dtype=np.float32))
            with torch.no_grad():
                for module in self._tail:
                    feats = module(feats)
            emb = feats["sentence_embedding"].float().numpy()
            if rows is None:
                rows = np.empty((len(texts), emb.shape[1]), dtype=np.float32)
            rows[idx] = emb
        assert rows is not None
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.ascontiguousarray(rows / np.maximum(norms, 1e-12), dtype=np.float32)
