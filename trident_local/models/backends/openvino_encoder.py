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
Beside the IR the entry keeps the model's tokenizer and a description of its pooling, and records
each precision whose check passed: a later process then runs :class:`CachedEncoder`, which needs
neither torch nor sentence-transformers (their imports and the weights' load were most of a
``trident index`` start-up on a CPU), and falls back to this full path when anything is missing.

Precision "int8" (profile ``minilm-int8``) quantises the converted model with NNCF's post-training
quantisation: weights and activations of the matrix products in int8, the rest in bf16 where the CPU
has it. Its calibration text is fixed, windows of Python's own documentation (``pydoc_data``, part
of every CPython), so that the model does not depend on whose documents were indexed first; the int8
model is cached beside the float one under a name that includes the calibration text's digest. It
embeds about 1.5x the windows per CPU-second of bf16 on a CPU without AMX, with vectors further from
float32 (mean cosine 0.995); its retrieval on the public subset is within 0.007 of bf16
(docs/INDEX.md#the-embedder-on-a-cpu; figures in benchmarks/README.md).
"""

from __future__ import annotations

import abc
import contextlib
import functools
import hashlib
import importlib.metadata
import io
import logging
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# OpenVINO sends usage events to Google Analytics from `import openvino.tools.ovc` (which `import
# openvino` loads) and from every conversion, unless a consent file in the user's home says no. Nothing
# here may reach beyond the machine: with `openvino_telemetry` unimportable, OpenVINO (and NNCF) use
# their own no-op stand-in, as they do where that package is not installed.
sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]

log = logging.getLogger(__name__)


@functools.cache
def _numpy_bridge_ready() -> None:
    """Make OpenVINO's bindings set up their numpy API now, in one thread.

    pybind11 initialises it on the first numpy view of a tensor, behind a GIL-aware once-flag; the
    service's first concurrent asks (8 threads filling request tensors at once) deadlocked in that
    initialisation, every thread idle, the process alive. The encoder is built under the model
    cache's lock, so doing it here means no two threads ever race on it."""
    import openvino as ov

    np.asarray(ov.Tensor(np.zeros((1, 1), dtype=np.int64)).data)

MODEL_FILE = "model.xml"
META_FILE = "encoder.json"  # pooling, tokenizer settings and the precisions whose check passed
TOKENIZER_FILE = "tokenizer.json"
POOLING_MODES = ("mean", "cls", "max")
MIN_COSINE = 0.99  # to torch float32 on the check sentences; bf16 gives >= 0.9999, int8 about 0.995
PRECISIONS = ("f32", "bf16", "int8")
CALIBRATION_WINDOWS = 300  # windows of CALIBRATION_WORDS words: the dense pool's window size
CALIBRATION_WORDS = 160
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


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def cache_key(model_dir: str | Path) -> str:
    """Changes when the weights (name, size, mtime) or the converting libraries change.

    Versions come from the installed distributions, so that computing the key imports nothing."""
    h = hashlib.sha256()
    libs = ("openvino", "torch", "transformers", "sentence-transformers", "tokenizers")
    h.update("|".join(_version(d) for d in libs).encode())
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


def describe(st: Any) -> dict[str, Any] | None:
    """What :class:`CachedEncoder` needs to reproduce ``st.encode`` without torch; None when the model
    is more than Transformer -> Pooling (mean, cls or max) -> Normalize, lowercases by itself, has
    prompts, has no fast tokenizer or no length limit: such a model keeps the full path."""
    mods = list(st)
    names = [type(m).__name__ for m in mods]
    if names[:2] != ["Transformer", "Pooling"] or any(n != "Normalize" for n in names[2:]):
        return None
    tok = getattr(mods[0], "tokenizer", None)
    mode = getattr(mods[1], "pooling_mode", None)
    if (tok is None or getattr(tok, "backend_tokenizer", None) is None or mode not in POOLING_MODES
            or getattr(mods[0], "do_lower_case", False) or any((getattr(st, "prompts", None) or {}).values())
            or getattr(st, "default_prompt_name", None)
            or not 0 < (tok.model_max_length or 0) <= 1_000_000):  # "no limit" is stored as 1e30
        return None
    return {"pooling": mode, "max_length": int(tok.model_max_length), "dim": int(st.get_embedding_dimension()),
            "pad_id": int(tok.pad_token_id), "pad_token": str(tok.pad_token),
            "pad_type_id": int(getattr(tok, "pad_token_type_id", 0)),
            "padding_side": tok.padding_side, "truncation_side": tok.truncation_side}


@functools.cache
def calibration_texts() -> tuple[str, ...]:
    """The int8 calibration text: windows of Python's documentation, the same on every machine."""
    try:
        from pydoc_data.topics import topics
    except ImportError as e:  # a Python built without its documentation
        raise ValueError("int8 needs Python's pydoc_data (its calibration text); use the minilm profile") from e
    words = " ".join(topics[k] for k in sorted(topics)).split()
    step = CALIBRATION_WORDS
    return tuple(" ".join(words[i : i + step]) for i in range(0, len(words), step))[:CALIBRATION_WINDOWS]


def int8_dir() -> str:
    """The int8 model's folder in an entry, named by its calibration text."""
    return "int8-" + hashlib.sha256("\n".join(calibration_texts()).encode()).hexdigest()[:12]


def _quantize(model: Any, tokenize: Any) -> Any:
    """NNCF post-training quantisation of ``model`` on :func:`calibration_texts`;
    ``tokenize(texts)`` gives the model's numpy inputs."""
    try:
        import nncf
    except ImportError as e:
        raise ValueError("int8 needs the nncf package (pip install 'trident-local[int8]'); "
                         "or use the minilm profile") from e
    nncf.set_log_level(logging.ERROR)
    texts = list(calibration_texts())
    log.info("quantising the embedder to int8 on %d calibration windows (once per machine)", len(texts))
    # NNCF draws its own progress bars on stdout: not ours to show (stdout may be a JSON report)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return nncf.quantize(model, nncf.Dataset(texts, lambda t: tokenize([t])),
                             model_type=nncf.ModelType.TRANSFORMER, subset_size=len(texts))


def _float_hint(precision: str) -> str:
    """The OpenVINO inference precision of what is not int8: bf16 where the CPU has it."""
    if precision != "int8":
        return precision
    from trident_kernels.cpu_features import cpu_has_fast_bf16

    return "bf16" if cpu_has_fast_bf16() else "f32"


def _read_cached(core: Any, entry: Path) -> Any | None:
    """The cached IR, or None (a damaged or model-less entry is removed so that it is written again)."""
    if (entry / MODEL_FILE).is_file():
        try:
            return core.read_model(str(entry / MODEL_FILE))
        except Exception as e:
            log.warning("OpenVINO cache %s unreadable (%s); converting again", entry, e)
            shutil.rmtree(entry, ignore_errors=True)
    elif entry.exists():  # an entry without its model (emptied by hand): replace it too
        shutil.rmtree(entry, ignore_errors=True)
    return None


def _save_entry(entry: Path, model: Any) -> None:
    """Write the IR into a temporary folder and rename it into place (a killed writer leaves no entry)."""
    import openvino as ov

    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
        ov.save_model(model, str(tmp / MODEL_FILE), compress_to_fp16=False)
        try:
            os.replace(tmp, entry)
        except OSError:  # another process cached it first
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:  # a read-only home is not an error: the model is simply not cached
        log.info("OpenVINO model not cached (%s)", e)


def read_meta(entry: Path) -> dict[str, Any]:
    """The entry's description (raises when it is missing or not a JSON object)."""
    from trident_local.atomic import read_json

    meta = read_json(entry / META_FILE)
    if not isinstance(meta, dict):
        raise ValueError(f"{entry / META_FILE} is not a JSON object")
    return meta


def _reads(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _record_check(entry: Path, st: Any, precision: str) -> None:
    """Let later processes skip torch: save the tokenizer and the description, and add ``precision``
    to the precisions whose check passed (each file replaced atomically)."""
    from trident_local.atomic import atomic_write_json, atomic_write_text

    meta = describe(st)
    if meta is None or not (entry / MODEL_FILE).is_file():
        return
    try:
        old = read_meta(entry)
    except (OSError, ValueError):  # missing or damaged: written anew below
        old = {}
    checked = set(old.get("checked", ()))
    tokenizer = st[0].tokenizer.backend_tokenizer.to_str()
    if precision in checked and {k: old.get(k) for k in meta} == meta and _reads(entry / TOKENIZER_FILE) == tokenizer:
        return  # recorded and intact: nothing to write
    try:
        atomic_write_text(entry / TOKENIZER_FILE, tokenizer)
        atomic_write_json(entry / META_FILE, {**meta, "checked": sorted(checked | {precision})})
    except (OSError, ValueError) as e:
        log.info("OpenVINO cache description not written (%s)", e)


def _normalised(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.ascontiguousarray(rows / np.maximum(norms, 1e-12), dtype=np.float32)


def _longest_first(texts: Sequence[str], batch_size: int) -> list[np.ndarray]:
    """Indices of ``texts`` in batches taken longest first (less padding), as sentence-transformers
    batches them."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    return [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]


def _encode_sorted(texts: Sequence[str], batch_size: int, embed: Any) -> np.ndarray:
    """``embed(batch) -> (n, dim)`` over batches taken longest first, rows returned in the order of
    ``texts`` and L2-normalised."""
    rows: np.ndarray | None = None
    for idx in _longest_first(texts, batch_size):
        emb = embed([texts[i] for i in idx])
        if rows is None:
            rows = np.empty((len(texts), emb.shape[1]), dtype=np.float32)
        rows[idx] = emb
    assert rows is not None
    return _normalised(rows)


class _Compiled(abc.ABC):
    """A model compiled for throughput: several CPU streams of one thread each.

    Why streams: one request spread over all cores synchronises them at every layer, which costs
    most on short windows and on cores that other processes (the parse workers) share. With one
    stream per core and batches in flight on all of them, the encoder ran 1.07x (bf16) and 1.15x
    (int8) the windows per CPU-second of one request over both cores on the text set's token windows
    (2-core AMD EPYC, measured outside ``trident index``). A lone request (a query) runs on one
    stream, so it uses one core: a 20-token query took 3.6 ms instead of 2.1 ms over both cores
    (bf16, same machine), at half the CPU time, which a service with concurrent users keeps."""

    def __init__(self, core: Any, model: Any, precision: str) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"unknown OpenVINO precision {precision!r}; use one of {', '.join(PRECISIONS)}")
        self.precision = precision
        self._compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": _float_hint(precision),
                                                           "PERFORMANCE_HINT": "THROUGHPUT"})
        self.streams = max(1, int(self._compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        self._inputs = [i.get_any_name() for i in self._compiled.inputs]
        self._output = self._compiled.output(0)
        self._local = threading.local()
        _numpy_bridge_ready()

    def token_embeddings(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        req = getattr(self._local, "request", None)
        if req is None:
            req = self._local.request = self._compiled.create_infer_request()
        res = req.infer({k: feats[k] for k in self._inputs})
        return np.asarray(res[self._output], dtype=np.float32)

    @abc.abstractmethod
    def _features(self, texts: list[str]) -> tuple[dict[str, np.ndarray], Any]:
        """One batch of texts -> the model's numpy inputs, and what pooling needs of the batch."""

    @abc.abstractmethod
    def _pool(self, tokens: np.ndarray, batch: Any) -> np.ndarray:
        """Token embeddings of one batch -> ``(n, dim)`` pooled rows (not yet normalised)."""

    def _embed(self, texts: list[str]) -> np.ndarray:
        feats, batch = self._features(texts)
        return self._pool(self.token_embeddings(feats), batch)

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 rows in the order of ``texts`` (batched longest first, as ST does)."""
        if self.streams < 2 or len(texts) < 2:
            return _encode_sorted(texts, batch_size, self._embed)
        return self._encode_streams(texts, max(1, min(batch_size, -(-len(texts) // self.streams))))

    def _encode_streams(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Batches longest first, one in flight per stream; each is collected and pooled in this
        thread before its request takes the next (no Python runs on OpenVINO's threads)."""
        batches = _longest_first(texts, batch_size)
        requests = getattr(self._local, "stream_requests", None)
        if requests is None:  # kept per thread: a request serves one caller at a time
            requests = self._local.stream_requests = [
                self._compiled.create_infer_request() for _ in range(self.streams)
            ]
        in_flight: list[tuple[int, Any] | None] = [None] * len(requests)
        pooled: dict[int, np.ndarray] = {}

        def collect(i: int) -> None:
            job = in_flight[i]
            if job is not None:
                requests[i].wait()
                pooled[job[0]] = self._pool(np.array(requests[i].get_output_tensor(0).data, dtype=np.float32), job[1])
                in_flight[i] = None

        try:
            for n, idx in enumerate(batches):
                i = n % len(requests)
                feats, batch = self._features([texts[j] for j in idx])
                collect(i)
                requests[i].start_async({k: feats[k] for k in self._inputs})
                in_flight[i] = (n, batch)
            for i in range(len(requests)):
                collect(i)
        finally:  # an error above: let the other requests finish before they are freed
            for i, job in enumerate(in_flight):
                if job is not None:
                    requests[i].wait()
        rows = np.empty((len(texts), pooled[0].shape[1]), dtype=np.float32)
        for n, idx in enumerate(batches):
            rows[idx] = pooled[n]
        return _normalised(rows)


class OpenVINOEncoder(_Compiled):
    """``encode`` as sentence-transformers does it, with the transformer compiled by OpenVINO."""

    def __init__(self, st: Any, model_dir: str | Path, *, precision: str, cache: Path | None = None) -> None:
        import openvino as ov

        self._st = st
        self._tail = list(st)[1:]  # pooling, normalisation, ...: run as torch modules
        core = ov.Core()
        entry = cache / cache_key(model_dir) if cache is not None else None
        model = _read_cached(core, entry) if entry is not None else None
        converted = model is None
        if converted:
            model = _convert(st)
        run, quantized = model, False
        if precision == "int8":
            qentry = entry / int8_dir() if entry is not None else None
            run = _read_cached(core, qentry) if qentry is not None and not converted else None
            if run is None:
                run, quantized = _quantize(model, self._numpy_inputs), True
        super().__init__(core, run, precision)
        self._check()
        if entry is not None:  # cached only once its check passed
            if converted:
                _save_entry(entry, model)
            if quantized and entry.is_dir():
                _save_entry(entry / int8_dir(), run)
            _record_check(entry, st, precision)

    def _numpy_inputs(self, texts: list[str]) -> dict[str, np.ndarray]:
        return {k: v.numpy() for k, v in _tokenize(self._st, texts).items() if hasattr(v, "numpy")}

    def _check(self) -> None:
        """Refuse a conversion whose vectors are not the model's (a profile's model of another kind)."""
        import torch

        with torch.no_grad():
            ref = np.asarray(self._st.encode(CHECK_TEXTS, normalize_embeddings=True), dtype=np.float32)
        cos = float((self.encode(CHECK_TEXTS) * ref).sum(1).min())
        if not cos >= MIN_COSINE:
            raise ValueError(f"its vectors differ from torch's (cosine {cos:.4f} < {MIN_COSINE})")

    def _features(self, texts: list[str]) -> tuple[dict[str, np.ndarray], Any]:
        feats = _tokenize(self._st, texts)
        return {k: v.numpy() for k, v in feats.items() if hasattr(v, "numpy")}, feats

    def _pool(self, tokens: np.ndarray, batch: Any) -> np.ndarray:
        import torch

        feats = {**batch, "token_embeddings": torch.from_numpy(tokens)}
        with torch.no_grad():
            for module in self._tail:
                feats = module(feats)
        return feats["sentence_embedding"].float().numpy()


class CachedEncoder(_Compiled):
    """A cached entry run with the saved tokenizer and numpy pooling: no torch, no sentence-transformers.

    Used only for a precision whose check against torch passed when the entry was written; the
    tokeniser settings are those sentence-transformers passes (pad to the longest, truncate at the
    model's maximum), and the tests hold its vectors to the full path's."""

    def __init__(self, entry: Path, meta: dict[str, Any], precision: str) -> None:
        import openvino as ov
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(entry / TOKENIZER_FILE))
        tok.enable_truncation(max_length=int(meta["max_length"]), strategy="longest_first",
                              direction=meta["truncation_side"])
        tok.enable_padding(direction=meta["padding_side"], pad_id=int(meta["pad_id"]),
                           pad_type_id=int(meta["pad_type_id"]), pad_token=meta["pad_token"])
        self._tok = self.tokenizer = tok
        self._pooling = meta["pooling"]
        self.dim = int(meta["dim"])
        self.max_seq_length = int(meta["max_length"])
        core = ov.Core()
        folder = entry / int8_dir() if precision == "int8" else entry
        super().__init__(core, core.read_model(str(folder / MODEL_FILE)), precision)

    @classmethod
    def load(cls, model_dir: str | Path, precision: str, cache: Path | None) -> CachedEncoder | None:
        """The encoder when the cache holds a checked entry for ``precision``; None otherwise."""
        if cache is None:
            return None
        entry = cache / cache_key(model_dir)
        try:
            meta = read_meta(entry)
            if precision not in meta.get("checked", ()) or meta.get("pooling") not in POOLING_MODES:
                return None
            return cls(entry, meta, precision)
        except Exception as e:  # anything missing or damaged: the full path converts and records again
            log.debug("no torch-free OpenVINO encoder from %s: %s", entry, e)
            return None

    def _features(self, texts: list[str]) -> tuple[dict[str, np.ndarray], Any]:
        encs = self._tok.encode_batch(texts)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        return {"input_ids": np.array([e.ids for e in encs], dtype=np.int64), "attention_mask": mask,
                "token_type_ids": np.array([e.type_ids for e in encs], dtype=np.int64)}, mask

    def _pool(self, tokens: np.ndarray, mask: Any) -> np.ndarray:
        if self._pooling == "cls":
            return tokens[:, 0]
        m = mask[:, :, None].astype(np.float32)
        if self._pooling == "max":
            return np.where(m > 0, tokens, -1e9).max(axis=1)
        return (tokens * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
