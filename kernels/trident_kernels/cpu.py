"""MaxSim on the CPU: the fused kernel where it runs, blocked torch otherwise.

With AMX-BF16 or AVX512-BF16 (and a C compiler, see :mod:`trident_kernels.amx`) the
fp32-accumulating precisions run ``amx_maxsim.c`` (AMX tiles) or ``avx512_maxsim.c``
(``vdpbf16ps``): bf16 products with fp32 accumulation, operands split
into bf16 hi/lo parts where they are not bf16 (:class:`SplitPlan`), the max taken
straight from the tiles, pages shared out to one worker thread per core.

Blocked torch (every other case, and the fallback on any device): one GEMM per (page
block, query chunk) into a cache-sized tile, then a segmented max over each page's token
rows and a sum over each query's rows. Nothing larger than one tile is ever
materialised, and pages are read straight from the packed (possibly memory-mapped)
token matrix, never padded.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from trident_kernels import amx
from trident_kernels.blocks import block_tokens_for, plan_blocks, segment_max, sum_query_rows
from trident_kernels.cpu_features import cpu_has_fast_bf16
from trident_kernels.packed import PackedPages, as_tensor, gather_tokens
from trident_kernels.queries import PackedQueries

Precision = Literal["fp32", "exact", "native"]
PRECISIONS = ("fp32", "exact", "native")
LOW_PRECISION = (torch.float16, torch.bfloat16)
SPLIT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Query tokens per GEMM: enough rows to keep the GEMM efficient, few enough that the
# [block_tokens, rows] tile stays cache-sized.
MAX_QUERY_ROWS = 1024


def compute_dtype(page_dtype: torch.dtype, query_dtype: torch.dtype, precision: Precision) -> torch.dtype:
    """fp32 unless asked for "native" low precision on 16-bit pages (or everything is fp64).

    "native" runs the GEMM in the pages' dtype: the hardware accumulates each dot product
    in fp32 (AMX/AVX512-BF16, tensor cores) but rounds it to 16 bits before the max. The
    sum over query tokens is fp32 in every mode.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
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
    bf16 GEMM speed. This is the torch path's rule; fp16 and fp32 inputs keep its fp32
    GEMM, because as separate torch ops a hi/lo bf16 split (3 terms) measured no faster.
    Where a fused kernel runs (AMX or AVX512-BF16) it takes all of these inputs instead.
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


@dataclass(frozen=True)
class SplitPlan:
    """How the fp32-accumulating path runs in the fused kernel (see ``amx_maxsim.c``).

    Every operand is written as a sum of bf16 parts: a bf16-valued tensor is one part,
    anything else ``hi = bf16(x)`` plus ``lo = bf16(x - hi)`` (round to nearest). A
    product of two bf16 numbers is exact in fp32 and AMX accumulates in fp32, so
    ``q . p`` is the fp32 sum of the part products ``q_picks[i] x p_picks[i]`` (0 = hi,
    1 = lo), laid side by side along the reduction axis: one tile GEMM of depth
    ``len(q_picks) * dim`` adds them up, so fp32 pages cost ~3x the AMX work of bf16 ones
    and still far less than an fp32 GEMM. Without AMX (``avx512_maxsim.c``) a bf16
    instruction does only twice an fp32 FMA's products, so there plans of 2-4 terms run as
    fp32 products instead (exact, like the GEMM: a one-part bf16 screen, then fp32 dots for
    the tokens near each row's max) and only 1-term plans use the bf16 parts.

    Exactness: an fp16 value is exactly hi + lo (11 significant bits <= 8 + 8), so
    16-bit inputs with all four terms have exact products, like the fp32 GEMM
    (``"exact"``). fp32 values have 24 bits; hi + lo keeps 16 of them (|x - hi - lo| <=
    2^-17 |x|). ``"fp32"`` drops the lo x lo term (<= 2^-18 |q| |p|) for fp16 and fp32
    alike, so each product is within ~2^-16 relative of exact: ~1e-5 on a 32-token score
    of unit vectors, vs ~4e-6 for the fp32 GEMM, at 3 terms instead of 4 (fp16 pages on
    an AMX CPU ran 1.4k pages/s with 4 terms, fp32 ones 2.1k with 3).
    """

    q_picks: tuple[int, ...]
    p_picks: tuple[int, ...]


def fp16_exact(x: torch.Tensor) -> bool:
    """True when every value of ``x`` is a float16 value (then hi + lo is exact)."""
    return x.dtype in LOW_PRECISION or bool(torch.equal(x.to(torch.float16).to(x.dtype), x))


def split_plan(page_dtype: torch.dtype, queries: torch.Tensor, precision: Precision) -> SplitPlan | None:
    """The bf16 parts for the AMX kernel, or None when the inputs need the fp32 GEMM.

    ``"exact"`` takes the kernel only where its products are exact (16-bit inputs, all
    terms); ``"fp32"`` also splits fp32 inputs and drops the lo x lo term (products
    within ~2^-16 relative, see SplitPlan).
    """
    if page_dtype not in SPLIT_DTYPES or precision == "native":
        return None
    q_parts = (0,) if bf16_exact(queries) else (0, 1)
    p_parts = (0,) if page_dtype == torch.bfloat16 else (0, 1)
    wide = page_dtype == torch.float32 or not fp16_exact(queries)  # more than 16 bits somewhere
    if wide and precision == "exact":
        return None
    terms = [(a, b) for a in q_parts for b in p_parts if not (precision == "fp32" and a == 1 and b == 1)]
    return SplitPlan(tuple(a for a, _ in terms), tuple(b for _, b in terms))


# The AMX kernel runs on runs of pages handed to worker threads (ctypes drops the GIL),
# one core each, rather than as one op split across all cores. A parallel op ends at a
# barrier, and when other processes share the cores one descheduled thread stalls it:
# at load ~5 on 2 cores the torch path ran 3-10x slower on 2 threads than on 1. Workers
# take tasks from a queue, so a descheduled worker delays only its own task.
PARALLEL_BLOCKS = True
TASKS_PER_WORKER = 8
MAX_PAGES_PER_TASK = 32
_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
_worker = threading.local()
# A forked child inherits the pool objects but not their threads: tasks would wait forever.
os.register_at_fork(after_in_child=_pools.clear)


def _init_worker() -> None:
    torch.ones(1 << 16).sum()  # torch's per-thread lazy init reads the global thread count now
    torch.set_num_threads(1)  # this thread's OpenMP/MKL count (thread-local in the runtime)
    _worker.active = True


def block_pool() -> ThreadPoolExecutor | None:
    """Workers for the calling thread's torch thread count, or None to run inline.

    ``torch.set_num_threads(1)`` in each worker also changes torch's process-wide default
    for threads created later, so the caller's count is put back once every worker is up.
    """
    n = torch.get_num_threads()
    if not PARALLEL_BLOCKS or n < 2 or getattr(_worker, "active", False):
        return None
    with _pools_lock:
        pool = _pools.get(n)
        if pool is None:
            pool = ThreadPoolExecutor(n, thread_name_prefix="maxsim", initializer=_init_worker)
            ready = threading.Barrier(n + 1)
            started = [pool.submit(ready.wait) for _ in range(n)]
            ready.wait()
            for future in started:
                future.result()
            torch.set_num_threads(n)
            _pools[n] = pool
    return pool


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
    if (
        dtype == torch.float32
        and device.type == "cpu"
        and pages.torch_dtype in amx.DTYPE_CODES
        and amx.available()
    ):
        plan = split_plan(pages.torch_dtype, queries.tokens, precision)
        if amx.has_f32_kernel() and (plan is None or len(plan.q_picks) > 1):
            return maxsim_fused(queries, pages, page_ids, None, out)  # fp32 products: what the GEMM computes
        if plan is not None:
            return maxsim_fused(queries, pages, page_ids, plan, out)
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


def maxsim_fused(
    queries: PackedQueries,
    pages: PackedPages,
    page_ids: np.ndarray,
    plan: SplitPlan | None,
    out: torch.Tensor,
) -> torch.Tensor:
    """The fused kernel over runs of pages, one run per worker task (see block_pool); bf16
    parts per ``plan``, or fp32 products when ``plan`` is None (:func:`amx.page_maxima_f32`)."""
    tokens = as_tensor(pages.tokens)
    if tokens.stride(1) != 1:
        tokens = tokens.contiguous()
    lengths = pages.lengths[page_ids]
    positions = np.flatnonzero(lengths > 0)  # empty pages keep their 0
    starts = pages.offsets[page_ids[positions]]
    lengths = lengths[positions]
    if plan is None:
        q_rows = amx.PackedQueryRows(queries.tokens)

        def page_maxima(part: slice) -> torch.Tensor:
            return amx.page_maxima_f32(tokens, starts[part], lengths[part], q_rows)
    else:
        q_tiles = amx.PackedQueryTiles(queries.tokens, plan.q_picks)

        def page_maxima(part: slice) -> torch.Tensor:
            return amx.page_maxima(tokens, starts[part], lengths[part], q_tiles, plan.p_picks)

    def run(part: slice) -> None:
        out[:, columns(positions[part])] = sum_query_rows(page_maxima(part).contiguous(), queries)

    pool = block_pool()
    workers = 1 if pool is None else torch.get_num_threads()
    per_task = int(np.clip(-(-positions.size // (TASKS_PER_WORKER * workers)), 1, MAX_PAGES_PER_TASK))
    parts = [slice(i, i + per_task) for i in range(0, positions.size, per_task)]
    if pool is None or len(parts) == 1:
        for part in parts:
            run(part)
    else:
        for future in [pool.submit(run, part) for part in parts]:
            future.result()
    return out
