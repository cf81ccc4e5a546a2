"""TokenIVF: recall on a small clustered set, exactness of the rerank, save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from trident_kernels import PackedPages, maxsim, maxsim_topk, pack_pages
from trident_kernels.ann import TokenIVF, csr_from_pairs, default_n_centroids, ranges_to_index

DIM = 32
TOKENS = 24


def clustered(n_pages: int = 400, seed: int = 0) -> tuple[PackedPages, list[torch.Tensor]]:
    """Topics of 8 concepts, 20 pages each; 70% topic tokens, 30% random; queries copy
    12 concepts of one page with fresh noise."""
    g = torch.Generator().manual_seed(seed)
    concepts = torch.nn.functional.normalize(torch.randn(256, DIM, generator=g), dim=-1)
    topics = torch.randint(256, (n_pages // 20, 8), generator=g)

    def noisy(ids: torch.Tensor) -> torch.Tensor:
        x = concepts[ids] + 0.3 / DIM**0.5 * torch.randn(len(ids), DIM, generator=g)
        return torch.nn.functional.normalize(x, dim=-1)

    page_concepts = []
    for i in range(n_pages):
        own = topics[i % len(topics)][torch.randint(8, (TOKENS,), generator=g)]
        anywhere = torch.randint(256, (TOKENS,), generator=g)
        page_concepts.append(torch.where(torch.rand(TOKENS, generator=g) < 0.7, own, anywhere))
    pages = [noisy(c) for c in page_concepts]
    pages[5] = pages[5][:0]  # an empty page must never break the index
    queries = []
    for _ in range(20):
        source = page_concepts[int(torch.randint(n_pages, (1,), generator=g))]
        queries.append(noisy(source[torch.randint(TOKENS, (12,), generator=g)]))
    return pack_pages(pages), queries


@pytest.fixture(scope="module")
def corpus() -> tuple[PackedPages, list[torch.Tensor]]:
    return clustered()


@pytest.fixture(scope="module")
def index(corpus) -> TokenIVF:
    pages, _ = corpus
    return TokenIVF.build(pages, n_centroids=64, nprobe=8, n_candidates=40, seed=0)


@pytest.fixture(scope="module")
def exact(corpus) -> tuple[torch.Tensor, torch.Tensor]:
    pages, queries = corpus
    return maxsim_topk(queries, pages, 10)


def recall(got: torch.Tensor, want: torch.Tensor) -> float:
    return float(
        np.mean([len(set(a.tolist()) & set(b.tolist())) / len(b) for a, b in zip(got, want, strict=True)])
    )


def test_helpers_build_csr_and_ranges():
    offsets, cols = csr_from_pairs(np.array([1 * 5 + 4, 0 * 5 + 2, 1 * 5 + 4, 1 * 5 + 0]), n_rows=3, n_cols=5)
    assert offsets.tolist() == [0, 1, 3, 3] and cols.tolist() == [2, 0, 4]
    flat, owner = ranges_to_index(offsets, np.array([1, 2, 0]))
    assert flat.tolist() == [1, 2, 0] and owner.tolist() == [0, 0, 2]
    assert default_n_centroids(1_000_000) == 2048


def test_index_structure(corpus, index):
    pages, _ = corpus
    assert index.n_pages == pages.n_pages and index.n_centroids == 64
    assert index.code_offsets[6] - index.code_offsets[5] == 0  # the empty page has no codes
    assert index.list_offsets[-1] == index.code_offsets[-1]  # both maps hold the same pairs
    for page in (0, 17, 399):
        codes = index.codes[index.code_offsets[page] : index.code_offsets[page + 1]]
        for c in codes:
            listed = index.list_pages[index.list_offsets[c] : index.list_offsets[c + 1]]
            assert page in listed


def test_recall_on_clustered_data(corpus, index, exact):
    _, queries = corpus
    scores, ids = index.search(queries, k=10)
    assert scores.shape == ids.shape == (len(queries), 10)
    assert recall(ids, exact[1]) >= 0.9


def test_rerank_scores_are_exact(corpus, index):
    pages, queries = corpus
    scores, ids = index.search(queries, k=10)
    full = maxsim(queries, pages)
    torch.testing.assert_close(scores, full.gather(1, ids))
    assert torch.all(scores[:, :-1] >= scores[:, 1:])  # sorted best first


def test_all_candidates_equals_exhaustive(corpus, index, exact):
    pages, queries = corpus
    scores, ids = index.search(queries, k=10, n_candidates=pages.n_pages, nprobe=64)
    torch.testing.assert_close(scores, exact[0])


def test_fewer_candidates_than_k_are_padded(corpus, index):
    _, queries = corpus
    scores, ids = index.search(queries[:2], k=10, n_candidates=3)
    assert torch.all(ids[:, 3:] == -1) and torch.all(torch.isinf(scores[:, 3:]))
    assert torch.all(ids[:, :3] >= 0)


def test_save_load_round_trip(tmp_path, corpus, index):
    pages, queries = corpus
    expected = index.search(queries, k=10)
    index.save(tmp_path / "plain")
    with pytest.raises(ValueError):
        TokenIVF.load(tmp_path / "plain").search(queries, k=10)  # no pages attached
    attached = TokenIVF.load(tmp_path / "plain", pages=pages)
    for got, want in zip(attached.search(queries, k=10), expected, strict=True):
        assert torch.equal(got, want)
    index.save(tmp_path / "with_pages", include_pages=True)
    mapped = TokenIVF.load(tmp_path / "with_pages")
    assert isinstance(mapped.pages.tokens, np.memmap)
    for got, want in zip(mapped.search(queries, k=10), expected, strict=True):
        assert torch.equal(got, want)
    with pytest.raises(ValueError):
        TokenIVF.load(tmp_path / "plain", pages=pages.view(0, 10))
