"""The one MaxSim entry point: normalise inputs, pick a backend, return fp32 scores.

score(q, page) = sum over q's unmasked tokens of max over the page's tokens of <q_t, p_j>.
A page with no tokens scores 0 for every query: the max over an empty set is undefined,
and 0 is what a page that matches nothing contributes to a sum, so ranking code never
meets -inf or NaN. Empty queries (every token masked) also score 0.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch

from trident_kernels.cpu import Precision, maxsim_torch
from trident_kernels.packed import Array, PackedPages, as_packed, as_tensor
from trident_kernels.queries import PackedQueries, Queries, pack_queries

Backend = Literal["auto", "torch", "triton"]
PageIndices = Sequence[int] | np.ndarray | torch.Tensor | None


def triton_available() -> bool:
    """Triton importable and a CUDA device present."""
    return importlib.util.find_spec("triton") is not None and torch.cuda.is_available()


def resolve_page_ids(page_indices: PageIndices, n_pages: int) -> np.ndarray:
    """All pages when None, else the given ids as int64 (bounds-checked)."""
    if page_indices is None:
        return np.arange(n_pages, dtype=np.int64)
    if isinstance(page_indices, torch.Tensor):
        page_indices = page_indices.detach().cpu().numpy()
    ids = np.asarray(page_indices, dtype=np.int64).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= n_pages):
        raise IndexError(f"page index out of range [0, {n_pages})")
    return ids


def choose_backend(backend: Backend, pages: PackedPages) -> Literal["torch", "triton"]:
    if backend not in ("auto", "torch", "triton"):
        raise ValueError(f"backend must be auto, torch or triton, got {backend!r}")
    if backend == "auto":
        on_cuda = pages.device.type == "cuda"
        return "triton" if on_cuda and triton_available() else "torch"
    return backend


def score_packed(
    queries: PackedQueries,
    pages: PackedPages,
    page_ids: np.ndarray,
    *,
    precision: Precision = "fp32",
    backend: Backend = "auto",
    block_tokens: int | None = None,
) -> torch.Tensor:
    """:func:`maxsim` on already-normalised inputs (used by top-k and the ANN rerank)."""
    if choose_backend(backend, pages) == "triton":
        from trident_kernels.triton_maxsim import maxsim_triton

        return maxsim_triton(queries, pages, page_ids, precision=precision)
    return maxsim_torch(queries, pages, page_ids, precision=precision, block_tokens=block_tokens)


def maxsim(
    queries: Queries,
    pages: PackedPages | Sequence[Array],
    *,
    query_mask: Array | None = None,
    page_indices: PageIndices = None,
    precision: Precision = "fp32",
    backend: Backend = "auto",
    block_tokens: int | None = None,
) -> torch.Tensor:
    """MaxSim scores ``[n_queries, n_pages]`` fp32 (columns follow ``page_indices`` if given).

    ``queries``: list of ``[q_i, dim]`` arrays, or a padded ``[nq, qmax, dim]`` array with
    ``query_mask`` (True = real token). ``pages``: :class:`PackedPages` (numpy, memmap or
    torch tokens) or a list of ``[n_i, dim]`` arrays. fp32/fp16/bf16 in; ``precision``:

    - ``"exact"``: every product exact in fp32 (as an fp32 GEMM computes it), fp32
      accumulation and output; ~1e-6 from float64 on ColPali-sized scores.
    - ``"fp32"`` (default): fp32 accumulation and output; products exact for bf16
      inputs, and within 2^-15 relative for fp16 and fp32 inputs on AMX CPUs (bf16 hi/lo
      split, :class:`trident_kernels.cpu.SplitPlan`) and for fp32 inputs on CUDA (3xTF32):
      score error <= 2^-15 sum_t |q_t| max_j |p_j| plus fp32 rounding, ~1e-5 on 32-token
      unit-vector queries. Elsewhere the same as ``"exact"``.
    - ``"native"``: 16-bit pages use the hardware's 16-bit GEMM (each dot product
      rounded to 16 bits before the max; faster on GPUs).

    ``backend="auto"`` runs the fused Triton kernel for CUDA pages; on the CPU the fused
    kernel where it runs (AMX-BF16 or AVX512-BF16, :mod:`trident_kernels.amx`), blocked
    torch otherwise.
    """
    packed_pages = as_packed(pages)
    packed_queries = pack_queries(queries, query_mask)
    ids = resolve_page_ids(page_indices, packed_pages.n_pages)
    return score_packed(
        packed_queries, packed_pages, ids, precision=precision, backend=backend, block_tokens=block_tokens
    )


def maxsim_reference(
    queries: Queries, pages: PackedPages | Sequence[Array], *, query_mask: Array | None = None
) -> torch.Tensor:
    """Plain per-page einsum in float64: the ground truth every path is tested against."""
    packed_pages = as_packed(pages)
    packed_queries = pack_queries(queries, query_mask)
    tokens = as_tensor(packed_pages.tokens).double().cpu()
    q_tokens = packed_queries.tokens.double().cpu()
    out = torch.zeros(packed_queries.n_queries, packed_pages.n_pages, dtype=torch.float64)
    for j in range(packed_pages.n_pages):
        page = tokens[packed_pages.offsets[j] : packed_pages.offsets[j + 1]]
        if page.shape[0] == 0:
            continue
        for i in range(packed_queries.n_queries):
            q = q_tokens[packed_queries.offsets[i] : packed_queries.offsets[i + 1]]
            if q.shape[0]:
                out[i, j] = torch.einsum("qd,pd->qp", q, page).amax(1).sum()
    return out
