"""The colpali pool end to end on a tiny random ColQwen2 (plumbing, not quality)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pdf_factory import rich_pdf, text_pdf
from tiny_models import make_tiny_colqwen2, shared_dir

from trident_local.config import Config
from trident_local.errors import TridentError
from trident_local.index import Index


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Index:
    d = tmp_path_factory.mktemp("colpali")
    weights = make_tiny_colqwen2(shared_dir() / "make_tiny_colqwen2")
    profile = d / "tiny-colqwen2.toml"
    profile.write_text(f'role = "multivector"\nbackend = "colpali"\nweights = "{weights}"\n'
                       '[options]\ndevice = "cpu"\n')
    cfg = Config(pools=["bm25", "colpali"], multivector=str(profile), embedder="minilm", dpi=36)
    idx = Index.create(d / "idx", cfg)
    rep = idx.add([rich_pdf(d / "a.pdf"), text_pdf(d / "b.pdf", ["one page", "two page"])], workers=1)
    assert not rep.failed
    return idx


def test_pages_are_stored_packed_per_document(index: Index) -> None:
    for doc_id in index.store.doc_ids():
        d = index.store.doc_dir(doc_id)
        tokens, offsets = np.load(d / "colpali_tokens.npy"), np.load(d / "colpali_offsets.npy")
        assert tokens.dtype == np.float16 and tokens.shape[1] == 128
        assert offsets[0] == 0 and offsets[-1] == len(tokens)
        assert len(offsets) == index.store.manifest.documents[doc_id].n_pages + 1


def test_retrieve_within_a_document_matches_reference_maxsim(index: Index) -> None:
    from trident_kernels import maxsim_reference

    pool = index.pool("colpali")
    hits = pool.retrieve("capacity by region", k=10, doc_ids=[index.resolve("a")])
    assert sorted(h.page for h in hits) == [1, 2, 3]
    d = index.store.doc_dir(index.resolve("a"))
    tokens, offsets = np.load(d / "colpali_tokens.npy"), np.load(d / "colpali_offsets.npy")
    q = pool.embedder.embed_queries(["capacity by region"])
    ref = maxsim_reference(q, [tokens[offsets[i]:offsets[i + 1]].astype(np.float32) for i in range(3)])[0]
    for h in hits:
        assert h.score == pytest.approx(float(ref[h.page - 1]), rel=1e-3, abs=1e-3)


def test_retrieve_over_the_whole_index(index: Index) -> None:
    hits = index.search("two page", pool="colpali", k=4)
    assert len(hits) == 4 and len({h.key for h in hits}) == 4
    assert hits[0].score >= hits[-1].score


def test_missing_profile_is_a_clear_error(tmp_path: Path) -> None:
    idx = Index.create(tmp_path / "idx", Config(pools=["colpali"]))
    with pytest.raises(TridentError, match="multivector profile"):
        idx.add([text_pdf(tmp_path / "x.pdf", ["hello"])], workers=1)
