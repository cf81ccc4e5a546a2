"""Query normalisation: every accepted query layout becomes packed, unmasked tokens.

Masked (padding) query tokens are dropped here, once, so no kernel ever has to know
about masks: a dropped token contributes nothing, exactly as the mask asks.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from trident_kernels.packed import Array, as_tensor

Queries = Array | Sequence[Array]


@dataclass(frozen=True, eq=False)
class PackedQueries:
    """``tokens[offsets[i]:offsets[i+1]]`` are the kept tokens of query ``i``."""

    tokens: torch.Tensor  # [n_kept_tokens, dim]
    offsets: np.ndarray  # int64 [n_queries + 1]

    @property
    def n_queries(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def dim(self) -> int:
        return int(self.tokens.shape[1])

    def uniform_length(self) -> int | None:
        """The common query length, or None when queries are ragged (or there are none)."""
        lengths = self.lengths
        if lengths.size == 0 or np.any(lengths != lengths[0]):
            return None
        return int(lengths[0])

    def row_query_ids(self) -> torch.Tensor:
        """Query index of every packed token row (for segmented sums)."""
        return torch.repeat_interleave(torch.arange(self.n_queries), torch.from_numpy(self.lengths)).to(
            self.tokens.device
        )

    def split(self, max_rows: int) -> list[QueryChunk]:
        """Runs of whole queries holding at most ``max_rows`` tokens (>= 1 query each);
        runs without any token are dropped (their scores stay 0)."""
        out: list[QueryChunk] = []
        start = 0
        while start < self.n_queries:
            stop = start + 1
            while stop < self.n_queries and self.offsets[stop + 1] - self.offsets[start] <= max_rows:
                stop += 1
            if self.offsets[stop] > self.offsets[start]:
                out.append(QueryChunk(start, stop, self.select(start, stop)))
            start = stop
        return out

    def select(self, start: int, stop: int) -> PackedQueries:
        lo, hi = self.offsets[start], self.offsets[stop]
        return PackedQueries(self.tokens[lo:hi], self.offsets[start : stop + 1] - lo)


@dataclass(frozen=True, eq=False)
class QueryChunk:
    """Queries ``start:stop`` of a batch, scored together by one GEMM."""

    start: int
    stop: int
    queries: PackedQueries


def pack_queries(queries: Queries | PackedQueries, query_mask: Array | None = None) -> PackedQueries:
    """Accept a list of ``[q_i, dim]`` arrays, a padded ``[nq, qmax, dim]`` array with an
    optional boolean ``query_mask [nq, qmax]`` (True = real token), or one ``[q, dim]``
    query. Numpy or torch.
    """
    if isinstance(queries, PackedQueries):
        if query_mask is not None:
            raise ValueError("query_mask cannot be combined with PackedQueries")
        return queries
    if isinstance(queries, (np.ndarray, torch.Tensor)):
        q = as_tensor(queries)
        if q.ndim == 2:
            q = q.unsqueeze(0)
        if q.ndim != 3:
            raise ValueError(f"padded queries must be [nq, qmax, dim], got {tuple(q.shape)}")
        if query_mask is None:
            mask = torch.ones(q.shape[:2], dtype=torch.bool, device=q.device)
        else:
            mask = as_tensor(query_mask).to(device=q.device, dtype=torch.bool)
            if mask.ndim == 1 and q.shape[0] == 1:
                mask = mask.unsqueeze(0)
            if tuple(mask.shape) != tuple(q.shape[:2]):
                raise ValueError(
                    f"query_mask {tuple(mask.shape)} does not match queries {tuple(q.shape[:2])}"
                )
        lengths = mask.sum(1).cpu().numpy().astype(np.int64)
        tokens = q[mask] if not bool(mask.all()) else q.reshape(-1, q.shape[-1])
    else:
        if query_mask is not None:
            raise ValueError("query_mask only applies to a padded [nq, qmax, dim] array")
        parts = [as_tensor(x) for x in queries]
        if not parts:
            raise ValueError("no queries given")
        for p in parts:
            if p.ndim != 2 or p.shape[1] != parts[0].shape[1]:
                raise ValueError("every query must be [q_i, dim] with the same dim")
        lengths = np.array([p.shape[0] for p in parts], dtype=np.int64)
        dtype = functools.reduce(torch.promote_types, [p.dtype for p in parts])
        tokens = torch.cat([p.to(dtype) for p in parts])
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return PackedQueries(tokens.contiguous(), offsets)
