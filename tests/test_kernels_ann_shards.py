"""TokenIVF from shards: the same arrays as ``build`` on the concatenation, the same recall."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from test_kernels_ann import clustered, recall

from trident_kernels import PackedPages, maxsim_topk
from trident_kernels.ann import ARRAYS, TokenIVF, sample_rows
from trident_kernels.ann_shards import (
    ShardCodes,
    assign_shard,
    build_from_shards,
    merge_codes,
    sample_across_shards,
)
from trident_kernels.packed import open_shard, pack_shards

CUTS = [0, 1, 1, 37, 120, 121, 260, 400]  # uneven shards, one with no pages, one of a single page


@pytest.fixture(scope="module")
def corpus() -> tuple[PackedPages, list[torch.Tensor]]:
    pages, queries = clustered()
    return PackedPages(pages.tokens.numpy().astype(np.float16), pages.offsets), queries


@pytest.fixture(scope="module")
def shards(corpus) -> list[PackedPages]:
    pages, _ = corpus
    return [pages.view(a, b) for a, b in zip(CUTS[:-1], CUTS[1:], strict=True)]


@pytest.fixture(scope="module")
def reference(corpus) -> TokenIVF:
    pages, _ = corpus
    return TokenIVF.build(pages, n_centroids=64, nprobe=8, n_candidates=40, seed=0)


def same_arrays(a: TokenIVF, b: TokenIVF) -> None:
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def _open(directory: Path) -> PackedPages:
    return PackedPages.load(directory, mmap=True)


def test_pack_shards_equals_concatenation(tmp_path, corpus, shards):
    pages, _ = corpus
    for packed in (pack_shards(shards), pack_shards(shards, directory=tmp_path / "p")):
        assert packed.tokens.dtype == np.float16
        np.testing.assert_array_equal(packed.offsets, pages.offsets)
        np.testing.assert_array_equal(np.asarray(packed.tokens), pages.tokens)
    assert isinstance(PackedPages.load(tmp_path / "p").tokens, np.memmap)
    empty = pack_shards([], dim=8, dtype=np.float16, directory=tmp_path / "e")
    assert empty.tokens.shape == (0, 8) and empty.offsets.tolist() == [0]


def test_sample_is_build_sample_of_the_concatenation(corpus, shards):
    pages, _ = corpus
    got = sample_across_shards(shards, 500, np.random.default_rng(7))
    want = sample_rows(pages.tokens, 500, np.random.default_rng(7))
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, sample_across_shards(shards, 500, np.random.default_rng(8)))


def test_given_centroids_equals_build(corpus, shards, reference):
    got = build_from_shards(shards, centroids=reference.centroids, nprobe=8, n_candidates=40)
    same_arrays(got, reference)
    assert got.pages is None and (got.nprobe, got.n_candidates) == (8, 40)


def test_shard_codes_are_page_local(shards, reference):
    codes = assign_shard(shards[3], reference.centroids)
    assert isinstance(codes, ShardCodes) and codes.code_offsets.size == shards[3].n_pages + 1
    lo, hi = reference.code_offsets[CUTS[3]], reference.code_offsets[CUTS[4]]
    np.testing.assert_array_equal(codes.codes, reference.codes[lo:hi])
    np.testing.assert_array_equal(codes.code_offsets, reference.code_offsets[CUTS[3] : CUTS[4] + 1] - lo)
    lists = merge_codes([codes], reference.n_centroids)
    assert lists[0][-1] == codes.codes.size and lists[1].max() < shards[3].n_pages


def test_lazy_shards_and_a_parallel_map(tmp_path, corpus, shards, reference):
    pages, _ = corpus
    lazy = []
    for i, s in enumerate(shards):
        s.save(tmp_path / str(i))
        lazy.append(functools.partial(_open, tmp_path / str(i)))
    opened = []

    def recording_map(fn, items):
        items = list(items)
        opened.extend(items)
        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(fn, items))

    got = build_from_shards(lazy, centroids=reference.centroids, map_fn=recording_map, pages=pages)
    same_arrays(got, reference)
    assert opened == lazy and got.pages is pages
    as_pairs = [(s.tokens, s.offsets) for s in shards]
    same_arrays(build_from_shards(as_pairs, centroids=reference.centroids), reference)
    with pytest.raises(ValueError, match="pages"):
        build_from_shards(lazy, centroids=reference.centroids, pages=open_shard(lazy[1]))


def test_trained_on_the_cross_shard_sample(corpus, shards, reference):
    pages, queries = corpus
    index = build_from_shards(shards, n_centroids=64, nprobe=8, n_candidates=40, seed=0, pages=pages)
    assert index.n_centroids == 64 and index.n_pages == pages.n_pages
    assert np.linalg.norm(index.centroids, axis=1) == pytest.approx(1.0, abs=1e-3)  # spherical detected
    exact = maxsim_topk(queries, pages, 10)
    scores, ids = index.search(queries, k=10)
    assert recall(ids, exact[1]) >= 0.9
    torch.testing.assert_close(scores[:, 0], exact[0][:, 0])
    same_arrays(index, reference)  # the same sample and seed train the same centroids as build's


def test_no_tokens_is_an_error():
    empty = PackedPages(np.zeros((0, 4), np.float16), np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="without tokens"):
        build_from_shards([empty, empty])
