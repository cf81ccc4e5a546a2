"""Text embedders, the sparse encoder and OCR, built through profiles like a user builds them."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from tiny_models import make_tiny_bge_m3, shared_dir

from trident_local.errors import TridentError
from trident_local.models.profiles import build_model, load_profile
from trident_local.models.protocols import OCREngine, SparseEncoder, TextEmbedder


@pytest.fixture(scope="module")
def minilm() -> TextEmbedder:
    return build_model("embedder", "minilm")


def test_minilm_profile_gives_normalised_float32_rows(minilm: TextEmbedder) -> None:
    assert isinstance(minilm, TextEmbedder)
    assert (minilm.dim, minilm.max_tokens) == (384, 256)
    emb = minilm.encode(["Revenue grew 12% in 2023.", "The fox jumps.", "Sales rose in 2023."], batch_size=2)
    assert emb.shape == (3, 384) and emb.dtype == np.float32 and emb.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    q = minilm.encode(["revenue growth"], kind="query")
    assert q.shape == (1, 384)
    assert minilm.encode([]).shape == (0, 384)


def test_minilm_loads_once_per_process(minilm: TextEmbedder) -> None:
    again = build_model("embedder", "minilm")
    assert again._model is minilm._model  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def bge_profile(tmp_path_factory: pytest.TempPathFactory) -> str:
    weights = make_tiny_bge_m3(shared_dir() / "tiny-bge-m3")
    toml = tmp_path_factory.mktemp("bge") / "bge.toml"
    src = Path(load_profile("bge-m3").source).read_text()
    toml.write_text(
        src.replace('weights = "bge-m3"', f'weights = "{weights}"').replace(
            'device = "auto"', 'device = "cpu"'
        )
    )
    return str(toml)


def test_bge_m3_dense_sparse_and_colbert(bge_profile: str) -> None:
    dense = build_model("embedder", bge_profile)
    sparse = build_model("sparse", bge_profile)
    assert isinstance(dense, TextEmbedder) and isinstance(sparse, SparseEncoder)
    assert dense._m is sparse._m  # one loaded model serves both roles
    texts = ["the quick brown fox", "Revenue grew 12% in 2023", "Figure 2 shows the accuracy"]
    emb = dense.encode(texts, batch_size=2)
    assert emb.shape == (3, dense.dim) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    # batching does not change the vectors
    np.testing.assert_allclose(dense.encode(texts[1:2]), emb[1:2], atol=1e-5)
    lex = sparse.encode_sparse(texts)
    assert len(lex) == 3 and all(isinstance(d, dict) for d in lex)
    vocab = {
        "quick",
        "brown",
        "fox",
        "Revenue",
        "grew",
        "12%",
        "in",
        "2023",
        "Figure",
        "2",
        "shows",
        "the",
        "accuracy",
    }
    assert set().union(*lex) <= vocab  # token strings, not ids, and no special tokens
    assert all(isinstance(w, float) and w > 0 for d in lex for w in d.values())
    col = dense.encode_colbert(texts[:2])
    assert [c.shape[1] for c in col] == [dense.dim] * 2
    assert col[0].shape[0] == 5  # 4 words + </s>; <s> dropped
    np.testing.assert_allclose(np.linalg.norm(col[0], axis=1), 1.0, atol=1e-5)
    assert dense.encode([]).shape == (0, dense.dim) and sparse.encode_sparse([]) == []


def test_tesseract_profile_reads_rendered_text() -> None:
    from PIL import Image, ImageDraw

    ocr = build_model("ocr", "tesseract")
    assert isinstance(ocr, OCREngine)
    if not ocr.available():
        pytest.skip("tesseract binary not installed")
    img = Image.new("RGB", (520, 90), "white")
    ImageDraw.Draw(img).text((12, 20), "Revenue grew 12%", fill="black", font_size=36)
    assert "Revenue grew 12%" in ocr.ocr(img)


def test_tesseract_missing_binary_is_a_clear_error() -> None:
    from PIL import Image

    ocr = build_model("ocr", "tesseract", binary="tesseract-not-installed")
    assert not ocr.available()
    with pytest.raises(TridentError, match="apt-get install tesseract-ocr"):
        ocr.ocr(Image.new("RGB", (10, 10)))
    assert shutil.which("tesseract-not-installed") is None
