"""The colpali pool end to end on a tiny random ColQwen2 (plumbing, not quality), and its
build from per-document files on synthetic tokens (no model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pdf_factory import rich_pdf, text_pdf
from tiny_models import make_tiny_colqwen2, shared_dir

from trident_local.config import Config
from trident_local.errors import TridentError
from trident_local.index import Index
from trident_local.retrieve import colpali


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


def test_built_pool_holds_the_documents_packed_in_order(index: Index) -> None:
    pool = index.pool("colpali")
    folder = pool.folder()
    assert folder is not None and not pool.is_stale()
    want = reference_pages({d: stored(index, d) for d in pool.documents()})
    tokens, offsets = np.load(folder / "pages" / "tokens.npy"), np.load(folder / "pages" / "offsets.npy")
    np.testing.assert_array_equal(tokens, want[0])
    np.testing.assert_array_equal(offsets, want[1])
    assert tokens.dtype == np.float16 and len(pool.read(folder).rows) == len(offsets) - 1


def stored(index: Index, doc_id: str) -> tuple[np.ndarray, np.ndarray]:
    d = index.store.doc_dir(doc_id)
    return np.load(d / "colpali_tokens.npy"), np.load(d / "colpali_offsets.npy")


def reference_pages(docs: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, list]:
    """What ``compute`` built before it streamed: every document concatenated in RAM."""
    tokens = np.concatenate([t for t, _ in docs.values()])
    offsets = np.concatenate([[0], np.cumsum(np.concatenate([np.diff(o) for _, o in docs.values()]))])
    rows = [(d, p) for d, (_, o) in docs.items() for p in range(1, len(o))]
    return tokens, offsets, rows


@pytest.fixture
def synthetic(tmp_path: Path) -> tuple[Index, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """An index whose documents have only stored colpali tokens: 6 documents of 1-12 pages,
    some pages without tokens, unit-norm float16 rows of dim 16."""
    idx = Index.create(tmp_path / "idx", Config(pools=["colpali"]))
    rng = np.random.default_rng(0)
    docs = {}
    for i in range(6):
        offsets = np.r_[0, np.cumsum(rng.integers(0, 30, size=rng.integers(1, 13)))].astype(np.int64)
        tokens = rng.standard_normal((offsets[-1], 16))
        tokens = (tokens / np.linalg.norm(tokens, axis=1, keepdims=True)).astype(np.float16)
        d = idx.store.doc_dir(f"doc{i}")
        d.mkdir(parents=True)
        np.save(d / "colpali_tokens.npy", tokens)
        np.save(d / "colpali_offsets.npy", offsets)
        docs[f"doc{i}"] = (tokens, offsets)
    return idx, docs


def test_compute_streams_documents_into_the_pages_file(synthetic, tmp_path: Path, monkeypatch) -> None:
    from trident_kernels import PackedPages
    from trident_kernels.ann import ARRAYS, TokenIVF

    idx, docs = synthetic
    want_tokens, want_offsets, want_rows = reference_pages(docs)
    monkeypatch.setattr(colpali, "IVF_MIN_PAGES", 1)
    joined = []
    real = np.concatenate

    def spy(arrays, *args, **kwargs):
        arrays = list(arrays)
        joined.extend(np.ndim(a) for a in arrays)
        return real(arrays, *args, **kwargs)

    pool = idx.pool("colpali")
    ids = list(docs)
    with monkeypatch.context() as m:
        m.setattr(np, "concatenate", spy)
        in_memory = pool.compute(ids)
        on_disk = pool.compute_into(ids, tmp_path / "built")
    assert 2 not in joined  # token matrices are never concatenated (page lengths may be)
    want_ivf = TokenIVF.build(PackedPages(want_tokens, want_offsets))
    for s in (in_memory, on_disk):
        np.testing.assert_array_equal(np.asarray(s.pages.tokens), want_tokens)
        np.testing.assert_array_equal(s.pages.offsets, want_offsets)
        assert s.pages.tokens.dtype == np.float16 and s.rows == want_rows
        for name in ARRAYS:  # same sample, same seed: the IVF of the concatenation
            np.testing.assert_array_equal(getattr(s.ivf, name), getattr(want_ivf, name), err_msg=name)
    assert isinstance(on_disk.pages.tokens, np.memmap) and on_disk.pages_dir == tmp_path / "built" / "pages"
    assert in_memory.pages_dir is None and not isinstance(in_memory.pages.tokens, np.memmap)


def test_save_keeps_pages_written_in_place_and_read_round_trips(synthetic, tmp_path: Path, monkeypatch) -> None:
    idx, docs = synthetic
    monkeypatch.setattr(colpali, "IVF_MIN_PAGES", 1)
    pool = idx.pool("colpali")
    folder = tmp_path / "built"
    s = pool.compute_into(list(docs), folder)
    tokens_file = folder / "pages" / "tokens.npy"
    before = tokens_file.stat().st_mtime_ns, tokens_file.stat().st_ino
    info = pool.save(s, folder)
    assert (tokens_file.stat().st_mtime_ns, tokens_file.stat().st_ino) == before  # not written twice
    assert info["ivf"] and info["tokens"] == int(s.pages.offsets[-1])
    back = pool.read(folder)
    np.testing.assert_array_equal(np.asarray(back.pages.tokens), np.asarray(s.pages.tokens))
    assert back.rows == s.rows and back.ivf.n_pages == len(s.rows)
    np.testing.assert_array_equal(back.ivf.codes, s.ivf.codes)
    elsewhere = tmp_path / "copy"
    pool.save(pool.compute(list(docs)), elsewhere)  # an in-memory structure writes its pages
    np.testing.assert_array_equal(np.load(elsewhere / "pages" / "tokens.npy"), np.asarray(s.pages.tokens))
