"""Options given to `trident index`: applied to a new index's config, merged into an existing one's."""

from __future__ import annotations

from pathlib import Path

import pytest

from trident_local.config import Config, IndexOptions
from trident_local.errors import TridentError
from trident_local.index import Index


def test_new_index_takes_the_options() -> None:
    cfg = IndexOptions(pools=["bm25"], embedder="bge-m3", ocr="none", multivector="colqwen2.5").apply(Config())
    assert (cfg.pools, cfg.embedder, cfg.ocr, cfg.multivector) == (["bm25", "colpali"], "bge-m3", "none",
                                                                   "colqwen2.5")
    assert IndexOptions().apply(Config()) == Config()


def test_existing_index_merges_pools_and_refuses_another_embedder() -> None:
    old = Config(pools=["bm25", "dense"], embedder="minilm")
    merged = IndexOptions(pools=["colpali", "bm25"], ocr="none").merge(old)
    assert merged.pools == ["bm25", "dense", "colpali"] and merged.ocr == "none" and old.ocr == "tesseract"
    assert IndexOptions(multivector="colqwen2.5").merge(old).pools == ["bm25", "dense", "colpali"]
    assert IndexOptions(embedder="minilm").merge(old) == old
    with pytest.raises(TridentError, match="built with embedder 'minilm'"):
        IndexOptions(embedder="bge-m3").merge(old)


def test_for_indexing_stores_the_merged_config(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    assert Index.for_indexing(root, IndexOptions(pools=["bm25"])).config.pools == ["bm25"]
    Index.for_indexing(root, IndexOptions(pools=["dense"], ocr="none"))
    cfg = Index.open(root).config
    assert cfg.pools == ["bm25", "dense"] and cfg.ocr == "none"
