"""Streaming top-k MaxSim: scores one page block at a time and keeps a running top-k.

Memory is ``n_queries x (k + block_pages)`` whatever the index size, so a 10M-page index
never produces a ``[n_queries, n_pages]`` matrix.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from trident_kernels.cpu import Precision
from trident_kernels.packed import Array, PackedPages, as_packed
from trident_kernels.queries import PackedQueries, Queries, pack_queries
from trident_kernels.scoring import Backend, PageIndices, resolve_page_ids, score_packed


def merge_topk(
    values: torch.Tensor, indices: torch.Tensor, new_values: torch.Tensor, new_indices: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k of the union of two ``[nq, *]`` candidate sets (ties keep the earlier page)."""
    all_values = torch.cat([values, new_values], dim=1)
    all_indices = torch.cat([indices, new_indices], dim=1)
    k = min(k, all_values.shape[1])
    # A stable descending sort keeps lower page ids first among equal scores.
    order = torch.sort(all_values, dim=1, descending=True, stable=True).indices[:, :k]
    return all_values.gather(1, order), all_indices.gather(1, order)


def maxsim_topk(
    queries: Queries | PackedQueries,
    pages: PackedPages | Sequence[Array],
    k: int,
    *,
    query_mask: Array | None = None,
    page_indices: PageIndices = None,
    block_pages: int = 4096,
    precision: Precision = "fp32",
    backend: Backend = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Best ``min(k, n)`` pages per query: ``(scores [nq, k] fp32, page ids [nq, k] int64)``.

    Rows are sorted by descending score; ids index ``pages`` (not ``page_indices``).
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    packed_pages = as_packed(pages)
    packed_queries = pack_queries(queries, query_mask)
    ids = resolve_page_ids(page_indices, packed_pages.n_pages)
    nq = packed_queries.n_queries
    device = packed_pages.device
    values = torch.empty(nq, 0, dtype=torch.float32, device=device)
    indices = torch.empty(nq, 0, dtype=torch.int64, device=device)
    for start in range(0, ids.size, max(block_pages, 1)):
        chunk = ids[start : start + block_pages]
        scores = score_packed(packed_queries, packed_pages, chunk, precision=precision, backend=backend)
        chunk_ids = torch.from_numpy(chunk).to(device).expand(nq, -1)
        if scores.shape[1] > k:  # shrink the block before merging: cheaper sort
            top = torch.topk(scores, k, dim=1)
            scores, chunk_ids = top.values, chunk_ids.gather(1, top.indices)
        values, indices = merge_topk(values, indices, scores, chunk_ids, k)
    return values, indices
