"""Blocked MaxSim in plain torch: the CPU path (and the fallback on any device).

One GEMM per (page block, query chunk) into a cache-sized tile, then a segmented max
over each page's token rows and a sum over each query's rows. Nothing larger than one
tile is ever materialised, and pages are read straight from the packed (possibly
memory-mapped) token matrix, never padded.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from trident_kernels.blocks import block_tokens_for, plan_blocks, segment_max, sum_query_rows
from trident_kernels.packed import PackedPages, as_tensor, gather_tokens
from trident_kernels.queries import PackedQueries

Precision = Literal["fp32", "native"]
LOW_PRECISION = (torch.float16, torch.bfloat16)
# Query tokens per GEMM: enough rows to keep the GEMM efficient, few enough that the
# [block_tokens, rows] tile stays cache-sized.
MAX_QUERY_ROWS = 1024


@functools.cache
def cpu_has_fast_bf16() -> bool:
    """True when this CPU multiplies bf16 natively (AMX or AVX512-BF16), per /proc/cpuinfo."""
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def compute_dtype(page_dtype: torch.dtype, query_dtype: torch.dtype, precision: Precision) -> torch.dtype:
    """fp32 unless asked for "native" low precision on 16-bit pages (or everything is fp64).

    "native" runs the GEMM in the pages' dtype: the hardware accumulates each dot product
    in fp32 (AMX/AVX512-BF16, tensor cores) but rounds it to 16 bits before the max. The
    sum over query tokens is fp32 in every mode.
    """
    if precision not in ("fp32", "native"):
        raise ValueError(f"precision must be 'fp32' or 'native', got {precision!r}")
    if page_dtype == torch.float64 and query_dtype == torch.float64:
        return torch.float64
    if precision == "native" and page_dtype in LOW_PRECISION:
        return page_dtype
    return torch.float32


def bf16_exact(x: torch.Tensor) -> bool:
    """True when every value of ``x`` is a bfloat16 value (so rounding to bf16 is lossless)."""
    return x.dtype == torch.bfloat16 or bool(torch.equal(x.to(torch.bfloat16).to(x.dtype), x))


def use_bf16_gemm(
    pages_dtype: torch.dtype, queries: torch.Tensor, device: torch.device, dtype: torch.dtype
) -> bool:
    """Exact fp32 scores from the CPU's bf16 matrix unit (AMX / AVX512-BF16).

    A product of two bf16 numbers is exact in fp32, and oneDNN's bf16 GEMM accumulates
    and writes fp32; only the *inputs* are rounded to bf16, which loses nothing when they
    already are bf16. So bf16 pages with bf16-valued queries get fp32-path precision at
    bf16 GEMM speed. fp16 and fp32 inputs would need a hi/lo bf16 split (3 GEMMs), which
    measured slower than the fp32 GEMM on this hardware, so they keep the fp32 GEMM.
    """
    return (
        dtype == torch.float32
        and device.type == "cpu"
        and pages_dtype == torch.bfloat16
        and cpu_has_fast_bf16()
        and torch.backends.mkldnn.is_available()
        and bf16_exact(queries)
    )


@contextlib.contextmanager
def bf16_fp32_matmul(enabled: bool) -> Iterator[None]:
    """Let oneDNN run fp32 matmuls on bf16 hardware (fp32 accumulation and output).

    The switch is process-global in torch, so it is restored on exit; it only changes
    results for inputs that are not bf16-valued, which :func:`use_bf16_gemm` rules out.
    """
    if not enabled:
        yield
        return
    settings = torch.backends.mkldnn.matmul
    previous = settings.fp32_precision
    settings.fp32_precision = "bf16"
    try:
        yield
    finally:
        settings.fp32_precision = previous


def columns(positions: np.ndarray) -> slice | torch.Tensor:
    """A slice when the output columns are one ascending run (cheap assignment)."""
    if positions.size and positions[-1] - positions[0] + 1 == positions.size:
        return slice(int(positions[0]), int(positions[-1]) + 1)
    return torch.from_numpy(positions)


def maxsim_torch(
    queries: PackedQueries,
    pages: PackedPages,
    page_ids: np.ndarray,
    *,
    precision: Precision = "fp32",
    block_tokens: int | None = None,
) -> torch.Tensor:
    """Scores ``[n_queries, len(page_ids)]`` fp32; empty pages and empty queries score 0."""
    device = pages.device
    out = torch.zeros(queries.n_queries, page_ids.size, dtype=torch.float32, device=device)
    if queries.tokens.shape[0] == 0 or page_ids.size == 0:
        return out
    if queries.dim != pages.dim:
        raise ValueError(f"query dim {queries.dim} != page dim {pages.dim}")
    dtype = compute_dtype(pages.torch_dtype, queries.tokens.dtype, precision)
    chunks = [
        (chunk, chunk.queries.tokens.to(device=device, dtype=dtype).contiguous())
        for chunk in queries.split(MAX_QUERY_ROWS)
    ]
    max_rows = max(rows.shape[0] for _, rows in chunks)
    bf16_gemm = use_bf16_gemm(pages.torch_dtype, queries.tokens, device, dtype)
    budget = block_tokens or block_tokens_for(max_rows, dtype.itemsize)
    with bf16_fp32_matmul(bf16_gemm):
        for block in plan_blocks(pages.lengths, page_ids, budget):
            tokens = as_tensor(gather_tokens(pages.tokens, pages.offsets, block.page_ids))
            tokens = tokens.to(device=device, dtype=dtype)
            cols = columns(block.positions)
            for chunk, rows in chunks:
                sims = rows @ tokens.T  # [query rows, block tokens]
                page_max = segment_max(sims, block.lengths, block.uniform_length)
                out[chunk.start : chunk.stop, cols] = sum_query_rows(page_max, chunk.queries)
    return out
