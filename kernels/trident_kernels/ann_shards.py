"""A :class:`~trident_kernels.ann.TokenIVF` built from shards (e.g. one per document).

Why: ``TokenIVF.build`` wants every token in one matrix and assigns them in one process.
At a million pages (~256 GB of float16 tokens) neither holds, so the build is split into
steps that each touch one shard at a time:

1. :func:`sample_across_shards`: the k-means training sample, uniform over all tokens and
   so proportional to each shard's token count; the same rows ``build`` samples from the
   concatenated pages with the same seed;
2. :func:`assign_shard`: a pure function of (shard, centroids) -> the shard's page-local
   codes, run anywhere (a process pool, Ray tasks) through ``map_fn``;
3. :func:`merge_codes`: page-local codes concatenated behind page offsets, and the
   inverted lists derived from them: the same CSR arrays ``build`` produces.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse
import torch

from trident_kernels.ann import (
    TokenIVF,
    assign_tokens,
    csr_from_pairs,
    default_n_centroids,
    sample_size,
    train_centroids,
)
from trident_kernels.packed import PackedPages, ShardSource, as_tensor, open_shard

MapFn = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]  # like map: results in order


class ShardCodes(NamedTuple):
    """One shard's page -> centroid map, pages numbered from 0 within the shard."""

    code_offsets: np.ndarray  # [n_pages + 1] int64
    codes: np.ndarray  # [nnz] int32, unique centroids per page, ascending


def shard_token_counts(shards: Sequence[ShardSource]) -> np.ndarray:
    """Tokens per shard (int64); opens each shard once, one at a time."""
    return np.array([open_shard(s).total_tokens for s in shards], dtype=np.int64)


def sample_across_shards(
    shards: Sequence[ShardSource], n: int, rng: np.random.Generator, *, counts: np.ndarray | None = None
) -> np.ndarray:
    """``n`` distinct token rows drawn uniformly from all shards, as float32.

    Row positions are drawn over the concatenated token range exactly as
    :func:`~trident_kernels.ann.sample_rows` draws them, so each shard gives rows in
    proportion to its tokens and the sample equals ``sample_rows`` on the concatenation.
    Shards that give no row are not opened.
    """
    counts = shard_token_counts(shards) if counts is None else counts
    starts = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    total = int(starts[-1])
    idx = np.sort(rng.choice(total, size=min(n, total), replace=False))
    bounds = np.searchsorted(idx, starts)
    out: np.ndarray | None = None
    for i in np.nonzero(np.diff(bounds))[0]:
        tokens = open_shard(shards[i]).tokens
        if out is None:
            out = np.empty((idx.size, tokens.shape[1]), dtype=np.float32)
        local = torch.from_numpy(idx[bounds[i] : bounds[i + 1]] - starts[i])
        out[bounds[i] : bounds[i + 1]] = as_tensor(tokens)[local].float().numpy()
    if out is None:
        raise ValueError("cannot sample from shards without tokens")
    return out


def assign_shard(shard: ShardSource, centroids: np.ndarray) -> ShardCodes:
    """The shard's page-local codes: a pure function, safe to run in another process."""
    packed = open_shard(shard)
    k = int(centroids.shape[0])
    assignment = assign_tokens(packed.tokens, torch.from_numpy(centroids).to(packed.device))
    page_of = np.repeat(np.arange(packed.n_pages, dtype=np.int64), packed.lengths)
    return ShardCodes(*csr_from_pairs(page_of * k + assignment, packed.n_pages, k))


def merge_codes(
    parts: Iterable[ShardCodes], n_centroids: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-shard codes, in shard order -> ``(list_offsets, list_pages, code_offsets, codes)``.

    Codes are copied behind running page offsets; the inverted lists are the transpose
    (a counting sort, so pages come out ascending in each list, as ``build`` has them).
    """
    held: list[ShardCodes | None] = list(parts)
    n_pages = sum(p.code_offsets.size - 1 for p in held if p is not None)
    code_offsets = np.zeros(n_pages + 1, dtype=np.int64)
    codes = np.empty(sum(p.codes.size for p in held if p is not None), dtype=np.int32)
    page = 0
    for i, p in enumerate(held):
        assert p is not None
        n, base = p.code_offsets.size - 1, code_offsets[page]
        code_offsets[page + 1 : page + n + 1] = base + p.code_offsets[1:]
        codes[base : base + p.codes.size] = p.codes
        page += n
        held[i] = None  # each shard's copy is freed once merged
    incidence = scipy.sparse.csr_matrix(
        (np.ones(codes.size, dtype=np.int8), codes, code_offsets), shape=(n_pages, n_centroids)
    ).tocsc()
    return incidence.indptr.astype(np.int64), incidence.indices.astype(np.int32), code_offsets, codes


def build_from_shards(
    shards: Sequence[ShardSource],
    *,
    centroids: np.ndarray | None = None,
    n_centroids: int | None = None,
    sample_tokens: int | None = None,
    niter: int = 10,
    spherical: bool | None = None,
    nprobe: int = 4,
    n_candidates: int = 256,
    seed: int = 0,
    verbose: bool = False,
    pages: PackedPages | None = None,
    map_fn: MapFn = map,
) -> TokenIVF:
    """``TokenIVF.build`` over the shards' pages, in order, without concatenating them.

    Same arguments as ``build``; ``map_fn`` runs :func:`assign_shard` over the shards
    (``map``, an executor's ``map``, Ray tasks) and must return results in order. Pass the
    shards as callables that open them to keep the list light and cheap to ship.
    ``pages`` (the packed concatenation, e.g. memory-mapped) is attached for ``search``.
    """
    if centroids is None:
        counts = shard_token_counts(shards)
        total = int(counts.sum())
        if total == 0:
            raise ValueError("cannot build an index over pages without tokens")
        k = n_centroids or default_n_centroids(total)
        rng = np.random.default_rng(seed)
        sample = sample_across_shards(shards, sample_size(total, k, sample_tokens), rng, counts=counts)
        centroids = train_centroids(sample, k, niter=niter, spherical=spherical, seed=seed, verbose=verbose)
        del sample
    parts = map_fn(functools.partial(assign_shard, centroids=centroids), shards)
    list_offsets, list_pages, code_offsets, codes = merge_codes(parts, int(centroids.shape[0]))
    if pages is not None and pages.n_pages != code_offsets.size - 1:
        raise ValueError(f"pages has {pages.n_pages} pages, the shards have {code_offsets.size - 1}")
    return TokenIVF(centroids, list_offsets, list_pages, code_offsets, codes, nprobe, n_candidates, pages)
