"""colpali-engine multi-vector embedder on tiny ColQwen2 / ColQwen2.5, through profiles."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from tiny_models import make_tiny_colpali, make_tiny_colqwen2, make_tiny_colqwen25, shared_dir

from trident_local.errors import TridentError
from trident_local.models.profiles import build_model
from trident_local.models.protocols import MultiVectorEmbedder


def profile(tmp: Path, weights: Path, **options: str) -> str:
    opts = "".join(f'{k} = "{v}"\n' for k, v in {"device": "cpu", **options}.items())
    path = tmp / f"{weights.name}.toml"
    path.write_text(f'role = "multivector"\nbackend = "colpali"\nweights = "{weights}"\n[options]\n{opts}')
    return str(path)


PAGES = [
    Image.new("RGB", (200, 260), "white"),
    Image.new("RGB", (120, 90), "navy"),
    Image.new("RGB", (300, 300), "green"),
]


@pytest.mark.parametrize(
    "maker",
    [make_tiny_colqwen2, make_tiny_colqwen25, make_tiny_colpali],
    ids=["colqwen2", "colqwen2.5", "colpali"],
)
def test_pages_and_queries_give_per_token_float32_vectors(maker, tmp_path: Path) -> None:
    emb = build_model("multivector", profile(tmp_path, maker(shared_dir() / maker.__name__)))
    assert isinstance(emb, MultiVectorEmbedder) and emb.dim == 128
    pages = emb.embed_images(PAGES, batch_size=2)
    assert len(pages) == 3
    for v in pages:
        assert v.ndim == 2 and v.shape[1] == 128 and v.dtype == np.float32
        assert not np.isnan(v).any()
        np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)  # no zero padding rows left
    lengths = {v.shape[0] for v in pages}
    # ColQwen keeps each page's aspect ratio (token counts vary); ColPali squares every page
    assert len(lengths) == (1 if maker is make_tiny_colpali else 2)
    # a page alone and inside a padded batch get the same vectors (eager attention on CPU)
    np.testing.assert_allclose(emb.embed_images([PAGES[1]])[0], pages[1], atol=1e-4)
    queries = emb.embed_queries(["what was revenue in 2023", "fox"], batch_size=2)
    assert [q.shape[1] for q in queries] == [128, 128] and queries[0].shape[0] > queries[1].shape[0]
    np.testing.assert_allclose(emb.embed_queries(["fox"])[0], queries[1], atol=1e-4)


def test_prefetching_pages_from_a_generator_keeps_order_and_vectors(tmp_path: Path) -> None:
    """The GPU path (the next batch prepared in a worker thread) gives what the plain loop gives,
    in order, from a generator that is read only as batches are needed; errors surface."""
    emb = build_model("multivector", profile(tmp_path, make_tiny_colqwen25(shared_dir() / "make_tiny_colqwen25")))
    pages = PAGES * 3  # 9 pages, 5 batches of 2
    plain = emb.embed_images(pages, batch_size=2, prefetch=False)
    opened: list[int] = []

    def lazily():
        for i, page in enumerate(pages):
            opened.append(i)
            yield page

    fetched = emb.embed_images(lazily(), batch_size=2, prefetch=True, show_progress=True)
    assert opened == list(range(len(pages)))
    assert len(fetched) == len(plain) == 9
    for a, b in zip(plain, fetched, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert emb.embed_images(iter([]), prefetch=True) == []

    def broken():
        yield PAGES[0]
        yield PAGES[1]
        yield PAGES[2]
        raise OSError("page 4 cannot be read")

    with pytest.raises(OSError, match="page 4"):
        emb.embed_images(broken(), batch_size=2, prefetch=True)


def test_lora_adapter_is_merged_into_its_local_base(tmp_path: Path) -> None:
    """vidore ships ColQwen/ColPali as adapters; the profile's base_model is the sibling folder."""
    import torch
    from colpali_engine.models import ColQwen2, ColQwen2Processor
    from peft import LoraConfig, get_peft_model

    base = make_tiny_colqwen2(tmp_path / "colqwen2-base")
    torch.manual_seed(1)
    net = ColQwen2.from_pretrained(str(base), attn_implementation="eager")
    cfg = LoraConfig(
        r=4,
        target_modules=["q_proj", "v_proj"],
        modules_to_save=["custom_text_proj"],
        init_lora_weights=False,
    )
    adapter = tmp_path / "colqwen2-adapter"
    get_peft_model(net, cfg).save_pretrained(adapter)
    ColQwen2Processor.from_pretrained(str(base)).save_pretrained(adapter)
    assert (adapter / "adapter_config.json").is_file() and not (adapter / "config.json").exists()

    merged = build_model(
        "multivector", profile(tmp_path, adapter, family="colqwen2", base_model="colqwen2-base")
    )
    plain = build_model("multivector", profile(tmp_path, base))
    a, b = merged.embed_queries(["fox"])[0], plain.embed_queries(["fox"])[0]
    assert a.shape == b.shape and not np.allclose(a, b, atol=1e-3)

    with pytest.raises(TridentError, match="base model"):
        build_model("multivector", profile(tmp_path, adapter, family="colqwen2", base_model="missing-base"))
    with pytest.raises(TridentError, match="LoRA adapter"):
        build_model("multivector", profile(tmp_path, adapter, family="colqwen2"))
    assert json.loads((adapter / "adapter_config.json").read_text())["r"] == 4
