"""Cache-sized page blocks and the segmented reductions that turn a block's token
similarities into page scores.

Shared by every torch path (fp32, native low precision, int8) so that block planning,
empty-page handling and the per-query sum are written once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from trident_kernels.queries import PackedQueries

# Per-block similarity tile budget in bytes (fp32). A few MiB keeps the tile near cache
# while the GEMM stays large. 64 MiB tiles (fewer OpenMP barriers) ran 1.7-2x faster in
# a short test at load ~30, but in the full benchmark they raised peak memory to 0.4-0.9x
# colpali-engine's without a stable speed gain, so 8 MiB stays.
DEFAULT_TILE_BYTES = 8 << 20
MIN_BLOCK_TOKENS = 1024
MAX_BLOCK_TOKENS = 1 << 16
# Above this many distinct page-length runs in one block, one segment_reduce call beats
# a Python loop of reshaped maxima.
MAX_RUNS_FOR_LOOP = 8


@dataclass(frozen=True)
class PageBlock:
    """Consecutive non-empty pages of the request, scored together."""

    positions: np.ndarray  # columns of the output matrix
    page_ids: np.ndarray  # pages in the PackedPages
    lengths: np.ndarray  # tokens per page (all > 0)

    @property
    def n_tokens(self) -> int:
        return int(self.lengths.sum())

    @property
    def uniform_length(self) -> int | None:
        first = int(self.lengths[0])
        return first if np.all(self.lengths == first) else None


def block_tokens_for(query_rows: int, element_size: int = 4, tile_bytes: int | None = None) -> int:
    """Page tokens per block so that a ``[query_rows, page_tokens]`` tile fits ``tile_bytes``."""
    tokens = (tile_bytes or DEFAULT_TILE_BYTES) // (element_size * max(query_rows, 1))
    return int(min(max(tokens, MIN_BLOCK_TOKENS), MAX_BLOCK_TOKENS))


def plan_blocks(all_lengths: np.ndarray, page_ids: np.ndarray, block_tokens: int) -> Iterator[PageBlock]:
    """Group the requested pages into blocks of about ``block_tokens`` tokens.

    Empty pages are skipped (their score stays 0). A page longer than the budget gets a
    block of its own; a block never splits a page.
    """
    lengths = all_lengths[page_ids]
    positions = np.flatnonzero(lengths > 0)
    if positions.size == 0:
        return
    lens = lengths[positions]
    starts = np.cumsum(lens) - lens
    block_of = starts // max(block_tokens, 1)
    cuts = np.flatnonzero(np.diff(block_of)) + 1
    for pos in np.split(positions, cuts):
        yield PageBlock(pos, page_ids[pos], lengths[pos])


def segment_max(sims: torch.Tensor, lengths: np.ndarray, uniform: int | None) -> torch.Tensor:
    """Max over each page's columns of ``sims [q_rows, page_tokens]`` -> ``[q_rows, n_pages]``.

    Equal-length pages (the ColPali case) reduce as one ``[rows * pages, length]`` max,
    the fastest torch reduction measured here (contiguous inner axis); ragged blocks loop
    over runs of equal length, or use one ``torch.segment_reduce`` when runs are many.
    """
    n_rows, n_pages = sims.shape[0], lengths.size
    if uniform is not None:
        return sims.view(n_rows * n_pages, uniform).amax(1).view(n_rows, n_pages)
    run_starts = np.flatnonzero(np.r_[True, lengths[1:] != lengths[:-1]])
    if run_starts.size > MAX_RUNS_FOR_LOOP:
        lens = torch.from_numpy(lengths).to(sims.device).expand(n_rows, n_pages)
        return torch.segment_reduce(sims, "max", lengths=lens, axis=1)
    out = sims.new_empty(n_rows, n_pages)
    run_stops = np.r_[run_starts[1:], n_pages]
    token_start = 0
    for a, b in zip(run_starts, run_stops, strict=True):
        length = int(lengths[a])
        n_tok = length * (b - a)
        out[:, a:b] = sims[:, token_start : token_start + n_tok].unflatten(1, (b - a, length)).amax(2)
        token_start += n_tok
    return out


def sum_query_rows(page_max: torch.Tensor, queries: PackedQueries) -> torch.Tensor:
    """Sum ``page_max [q_rows, n_pages]`` over each query's rows -> ``[n_queries, n_pages]`` fp32."""
    page_max = page_max.float()
    uniform = queries.uniform_length()
    if uniform:
        return page_max.view(queries.n_queries, uniform, page_max.shape[1]).sum(1)
    out = page_max.new_zeros(queries.n_queries, page_max.shape[1])
    return out.index_add_(0, queries.row_query_ids(), page_max)
