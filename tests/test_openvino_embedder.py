"""The OpenVINO runtime of the default embedder: the same vectors as torch, a cache that survives damage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trident_local.errors import TridentError
from trident_local.models.backends import openvino_encoder as ove
from trident_local.models.profiles import build_model

pytestmark = [pytest.mark.integration,  # converts and quantises the model: minutes on 2 cores
              pytest.mark.skipif(not ove.openvino_available(), reason="openvino is not installed")]

TEXTS = [
    "Helios Grid's revenue in the Coastal region was 95.2 million dollars in 2023.",
    "short",
    " ".join(["A long window of page text about solar farms and their capacity."] * 30),  # truncated
    "Reciprocal rank fusion with k = 60 merges the bm25 and dense rankings.",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRIDENT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "openvino"


def test_openvino_gives_the_vectors_of_torch_float32(cache: Path) -> None:
    ov_emb = build_model("embedder", "minilm", runtime="openvino")
    ref = build_model("embedder", "minilm", runtime="torch", dtype="float32")
    assert ov_emb.runtime.startswith("openvino") and ref.runtime == "torch"
    for kind in ("passage", "query"):
        a, b = ov_emb.encode(TEXTS, kind=kind, batch_size=3), ref.encode(TEXTS, kind=kind)
        assert a.shape == b.shape == (len(TEXTS), 384) and a.dtype == np.float32
        assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
        assert (a * b).sum(1).min() > 0.999  # row order kept although batches go longest first
    assert ov_emb.encode([]).shape == (0, 384)


def test_the_converted_model_is_cached_and_a_damaged_cache_is_replaced(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build_model("embedder", "minilm", runtime="openvino").encode(TEXTS[:1])
    entries = [p for p in cache.iterdir()]
    assert len(entries) == 1 and (entries[0] / ove.MODEL_FILE).is_file()
    assert not any(p.name.startswith(".tmp-") for p in cache.iterdir())  # written aside, then renamed

    real_convert = ove._convert
    monkeypatch.setattr(ove, "_convert", lambda st: pytest.fail("converted although cached"))
    again = build_model("embedder", "minilm", runtime="openvino").encode(TEXTS[:1])
    assert np.allclose(first, again, atol=1e-6)

    (entries[0] / ove.MODEL_FILE).write_text("<truncated")  # as a kill -9 of an older writer could leave it
    calls = []
    monkeypatch.setattr(ove, "_convert", lambda st: calls.append(1) or real_convert(st))
    repaired = build_model("embedder", "minilm", runtime="openvino").encode(TEXTS[:1])
    assert calls and np.allclose(first, repaired, atol=1e-6)
    assert (entries[0] / ove.MODEL_FILE).read_text().startswith("<?xml")
    (entries[0] / ove.MODEL_FILE).unlink()  # an entry left without its model is replaced as well
    build_model("embedder", "minilm", runtime="openvino")
    assert (entries[0] / ove.MODEL_FILE).is_file() and len(calls) == 2


def test_an_unwritable_cache_only_means_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("TRIDENT_CACHE_DIR", str(blocker))
    emb = build_model("embedder", "minilm", runtime="openvino")
    assert emb.encode(TEXTS[:2]).shape == (2, 384)


def test_the_runtime_report_names_the_embedders_runtime(cache: Path) -> None:
    from trident_local.models.runtime import Models, runtime_report

    Models(profiles={"embedder": "minilm"}).embedder.encode(["x"])
    builds = [b for b in runtime_report()["builds"] if b["role"] == "embedder"]
    assert builds and builds[-1]["runtime"] in ("openvino (bf16)", "openvino (f32)")


def test_runtime_choice(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TridentError, match="unknown embedder runtime"):
        build_model("embedder", "minilm", runtime="tensorrt")
    monkeypatch.setattr(ove, "openvino_available", lambda: False)
    with pytest.raises(TridentError, match="needs the openvino package"):
        build_model("embedder", "minilm", runtime="openvino")
    assert build_model("embedder", "minilm").runtime == "torch"  # auto falls back without a word of error


def test_a_conversion_that_changes_the_vectors_is_refused(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose converted vectors are not its own: 'openvino' is an error, 'auto' keeps torch."""
    real_encode = ove.OpenVINOEncoder.encode
    monkeypatch.setattr(ove.OpenVINOEncoder, "encode",
                        lambda self, texts, **kw: -real_encode(self, texts, **kw))
    with pytest.raises(TridentError, match="vectors differ"):
        build_model("embedder", "minilm", runtime="openvino")
    assert build_model("embedder", "minilm").runtime == "torch"


def test_a_checked_cache_entry_loads_without_torch(cache: Path) -> None:
    """The second process on a CPU runs the cached IR with the saved tokenizer: no torch, no
    sentence-transformers, the same vectors as the full path (tokens and all)."""
    import subprocess
    import sys

    from trident_local.models.backends._device import gpu_device_nodes

    full = build_model("embedder", "minilm", runtime="openvino")
    assert isinstance(full._ov, ove.OpenVINOEncoder)  # nothing cached yet: converted and checked
    entry = next(cache.iterdir())
    assert ove.read_meta(entry)["checked"] == [full._ov.precision]
    fast = build_model("embedder", "minilm")
    assert isinstance(fast._ov, ove.CachedEncoder) and fast.runtime == full.runtime
    assert fast.dim == full.dim == 384 and fast.max_tokens == full.max_tokens == 256
    texts = [*TEXTS, "", "  padded with spaces  ", "Ünïcode café — ﬁnal ligature"]
    for kind in ("passage", "query"):
        a, b = fast.encode(texts, kind=kind, batch_size=3), full.encode(texts, kind=kind, batch_size=3)
        assert np.abs(a - b).max() < 1e-5
    if gpu_device_nodes():
        pytest.skip("a GPU device node is present: 'auto' asks torch which device to use")
    probe = ("import sys; from trident_local.models.profiles import build_model; "
             "e = build_model('embedder', 'minilm'); e.encode(['x']); "
             "print(type(e._ov).__name__, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["CachedEncoder", "False", "False"]


def test_a_damaged_or_unchecked_description_falls_back_and_is_written_again(cache: Path) -> None:
    build_model("embedder", "minilm", runtime="openvino")
    entry = next(cache.iterdir())
    precision = ove.read_meta(entry)["checked"][0]
    other = "f32" if precision == "bf16" else "bf16"
    assert ove.CachedEncoder.load(ove_model_dir(), other, cache) is None  # never checked in that precision

    (entry / ove.TOKENIZER_FILE).write_text('{"trunc')  # as a kill -9 of an older writer could leave it
    assert ove.CachedEncoder.load(ove_model_dir(), precision, cache) is None
    emb = build_model("embedder", "minilm", runtime="openvino")  # the full path, which writes it again
    assert isinstance(emb._ov, ove.OpenVINOEncoder)
    assert isinstance(build_model("embedder", "minilm")._ov, ove.CachedEncoder)

    (entry / ove.META_FILE).write_text("not json")
    assert isinstance(build_model("embedder", "minilm")._ov, ove.OpenVINOEncoder)
    assert ove.read_meta(entry)["checked"] == [precision]


def test_only_plain_pooling_pipelines_are_described() -> None:
    """A model with more than Transformer -> Pooling -> Normalize keeps the full path."""
    from trident_local.models.backends.st_embedder import load_sentence_transformer

    st = load_sentence_transformer(ove_model_dir(), "cpu")
    assert ove.describe(st)["pooling"] == "mean"
    assert ove.describe([*st, st[1]]) is None  # an extra module after the normalisation


def ove_model_dir() -> str:
    from trident_local.models.profiles import load_profile

    return str(load_profile("minilm").weights_path())


@pytest.fixture(scope="module")
def int8_cache(tmp_path_factory: pytest.TempPathFactory):
    """One quantisation for the int8 tests (about half a minute on two cores)."""
    with pytest.MonkeyPatch.context() as mp:
        root = tmp_path_factory.mktemp("int8")
        mp.setenv("TRIDENT_CACHE_DIR", str(root))
        full = build_model("embedder", "minilm-int8", runtime="openvino")
        yield root / "openvino", full


def test_int8_is_quantised_once_on_a_fixed_text_and_kept(int8_cache, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, full = int8_cache
    assert full.runtime == "openvino (int8)" and isinstance(full._ov, ove.OpenVINOEncoder)
    ref = build_model("embedder", "minilm", runtime="torch", dtype="float32")
    for kind in ("passage", "query"):
        cos = (full.encode(TEXTS, kind=kind) * ref.encode(TEXTS, kind=kind)).sum(1)
        assert cos.min() > 0.98  # close to float32, not equal: bf16 gives > 0.9999
    texts = ove.calibration_texts()
    assert len(texts) == ove.CALIBRATION_WINDOWS and all(len(t.split()) == ove.CALIBRATION_WORDS for t in texts)
    entry = next(p for p in cache.iterdir() if not p.name.startswith("."))
    assert (entry / ove.int8_dir() / ove.MODEL_FILE).is_file() and (entry / ove.MODEL_FILE).is_file()
    assert "int8" in ove.read_meta(entry)["checked"]

    monkeypatch.setattr(ove, "_quantize", lambda *a: pytest.fail("quantised although cached"))
    fast = build_model("embedder", "minilm-int8")  # a later process needs no torch for it
    (entry / ove.META_FILE).unlink()  # without the description: the full path, reading the cached int8 model
    again = build_model("embedder", "minilm-int8", runtime="openvino")
    assert isinstance(again._ov, ove.OpenVINOEncoder) and isinstance(fast._ov, ove.CachedEncoder)
    assert fast.runtime == "openvino (int8)"
    a, b, c = (e.encode(TEXTS, batch_size=3) for e in (full, again, fast))
    assert np.abs(a - b).max() < 1e-6 and np.abs(a - c).max() < 1e-5


def test_int8_without_nncf_is_a_clear_error_or_torch(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_nncf(name, *args, **kwargs):
        if name == "nncf":
            raise ImportError("No module named 'nncf'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_nncf)
    with pytest.raises(TridentError, match="nncf"):
        build_model("embedder", "minilm-int8", runtime="openvino")
    assert build_model("embedder", "minilm-int8").runtime == "torch"  # auto: warned, then torch


def test_batches_on_several_streams_give_the_one_request_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bulk path keeps a batch in flight per stream; same rows, same order as one request at a time."""
    m = build_model("embedder", "minilm", runtime="openvino")
    enc = m._ov
    if enc.streams < 2:
        pytest.skip("OpenVINO gives this machine one stream")
    texts = [f"{t} {i}" for i in range(5) for t in TEXTS]
    one = ove._encode_sorted(texts, 2, enc._embed)
    np.testing.assert_array_equal(enc.encode(texts, batch_size=2), one)
    np.testing.assert_array_equal(enc.encode(texts[:1]), one[:1])  # a lone text: one request

    real, calls = enc._features, []

    def fails_on_the_third_batch(batch):
        calls.append(len(batch))
        if len(calls) == 3:
            raise RuntimeError("tokeniser failed")
        return real(batch)

    monkeypatch.setattr(enc, "_features", fails_on_the_third_batch)
    with pytest.raises(RuntimeError, match="tokeniser failed"):  # raised here; the batches in flight finish first
        enc.encode(texts, batch_size=2)
    monkeypatch.undo()
    np.testing.assert_array_equal(enc.encode(texts, batch_size=2), one)  # and the encoder still works
