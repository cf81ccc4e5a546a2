"""Fused MaxSim in Triton: the CUDA path.

One program scores ``BLOCK_Q`` queries against one page. It keeps the queries' tokens in
registers, streams the page's tokens in ``BLOCK_T`` tiles, and folds each tile's dot
products into a running per-token max, so the ``[query tokens x page tokens]`` matrix
never reaches HBM. Pages are read through the packed offsets (and an optional list of
page ids), so subsets and ragged pages cost nothing extra.

Importing this module imports triton; :mod:`trident_kernels.scoring` does so lazily. Under
``TRITON_INTERPRET=1`` the same kernel runs on CPU tensors (the tests use that).
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
import triton
import triton.language as tl

from trident_kernels.packed import PackedPages, as_tensor
from trident_kernels.queries import PackedQueries

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
MAX_ROWS = 256  # BLOCK_Q * QLEN cap: query tile held in registers

_CONFIGS = [
    triton.Config({"BLOCK_Q": bq, "BLOCK_T": bt}, num_warps=w, num_stages=s)
    for bq, bt, w, s in [
        (1, 64, 4, 3),
        (2, 64, 4, 3),
        (4, 64, 8, 3),
        (1, 128, 4, 3),
        (2, 128, 8, 3),
        (4, 128, 8, 2),
        (8, 32, 8, 2),
    ]
]


def _prune(configs: list[triton.Config], named_args: dict, **kwargs: object) -> list[triton.Config]:
    """Drop configs whose query tile exceeds the register budget (keep at least one)."""
    qlen = int(kwargs.get("QLEN", named_args.get("QLEN", 16)))
    kept = [c for c in configs if c.kwargs["BLOCK_Q"] * qlen <= MAX_ROWS]
    if INTERPRET:  # the interpreter is slow: tune over two configs, which still exercises autotune
        kept = kept[:2]
    return kept or [min(configs, key=lambda c: c.kwargs["BLOCK_Q"])]


def _wallclock_bench(fn, quantiles=None, **_: object) -> list[float]:
    """Autotune timer for the interpreter, where triton's CUDA-event timer cannot run."""
    fn()
    start = time.perf_counter()
    fn()
    ms = (time.perf_counter() - start) * 1e3
    return [ms, ms, ms] if quantiles else ms


@triton.autotune(
    configs=_CONFIGS,
    key=["QLEN", "D", "DOT", "UPCAST"],
    prune_configs_by={"early_config_prune": _prune},
    do_bench=_wallclock_bench if INTERPRET else None,
)
@triton.jit
def _maxsim_kernel(
    q_ptr,  # [nq, QLEN, D] zero-padded queries, contiguous
    qlen_ptr,  # [nq] int32 real lengths
    p_ptr,  # [total_tokens, D] packed page tokens (row stride stride_p)
    off_ptr,  # [n_pages + 1] int64 offsets
    ids_ptr,  # [n_out] int64 pages to score
    out_ptr,  # [nq, n_out] fp32
    nq,
    n_out,
    stride_p,
    D: tl.constexpr,
    QLEN: tl.constexpr,
    BLOCK_D: tl.constexpr,
    UPCAST: tl.constexpr,
    DOT: tl.constexpr,  # input_precision of fp32 dots: "ieee", "tf32x3" or "tf32"
    BLOCK_Q: tl.constexpr,
    BLOCK_T: tl.constexpr,
):
    col = tl.program_id(0)
    q_block = tl.program_id(1)
    page = tl.load(ids_ptr + col)
    start = tl.load(off_ptr + page)
    end = tl.load(off_ptr + page + 1)

    ROWS: tl.constexpr = BLOCK_Q * QLEN
    r = tl.arange(0, ROWS)
    qi = q_block * BLOCK_Q + r // QLEN
    ti = r % QLEN
    qlens = tl.load(qlen_ptr + qi, mask=qi < nq, other=0)
    row_ok = (qi < nq) & (ti < qlens)
    d = tl.arange(0, BLOCK_D)
    d_ok = d < D
    q = tl.load(
        q_ptr + (qi[:, None] * QLEN + ti[:, None]) * D + d[None, :],
        mask=row_ok[:, None] & d_ok[None, :],
        other=0.0,
    )

    best = tl.full((ROWS,), float("-inf"), tl.float32)
    n_tiles = tl.cdiv(end - start, BLOCK_T)
    for i in range(0, n_tiles):
        t = start + i * BLOCK_T + tl.arange(0, BLOCK_T)
        t_ok = t < end
        p = tl.load(p_ptr + t[:, None] * stride_p + d[None, :], mask=t_ok[:, None] & d_ok[None, :], other=0.0)
        if UPCAST:
            p = p.to(tl.float32)
        s = tl.dot(q, tl.trans(p), input_precision=DOT)
        s = tl.where(t_ok[None, :], s, float("-inf"))
        best = tl.maximum(best, tl.max(s, axis=1))

    # Padding rows and empty pages contribute 0 (an empty page scores 0 by definition).
    best = tl.where(row_ok & (end > start), best, 0.0)
    score = tl.sum(tl.reshape(best, (BLOCK_Q, QLEN)), axis=1)
    q_out = q_block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    tl.store(out_ptr + q_out * n_out + col, score, mask=q_out < nq)


def _pad_queries(queries: PackedQueries, qlen: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    padded = torch.zeros(queries.n_queries, qlen, queries.dim, dtype=dtype, device=device)
    lengths = torch.from_numpy(queries.lengths).to(device)
    mask = torch.arange(qlen, device=device)[None, :] < lengths[:, None]
    padded[mask] = queries.tokens.to(device=device, dtype=dtype)
    return padded


def maxsim_triton(
    queries: PackedQueries, pages: PackedPages, page_ids: np.ndarray, *, precision: str = "fp32"
) -> torch.Tensor:
    """Scores ``[n_queries, len(page_ids)]`` fp32 with the fused kernel.

    fp32 dots run as IEEE fp32 FMAs ("exact"), as three TF32 tensor-core products
    ("fp32": hi x hi + hi x lo + lo x hi, each operand hi + lo keeping 22 of its 24
    bits, so a product is within ~2^-21 relative of exact) or as one TF32 product
    ("native", 2^-11). On an H200 IEEE fp32 ran 0.2x colpali-engine's cuBLAS SGEMM: Triton
    lowers it to CUDA-core FMAs. 16-bit pages use tensor cores with fp32 accumulation;
    fp32 queries against 16-bit pages are rounded to the pages' dtype only under "native",
    otherwise the page tiles are upcast (a 16-bit value is exact in TF32, so "fp32" then
    loses only the queries' last 2 bits).
    """
    tokens = as_tensor(pages.tokens)
    device = tokens.device
    if tokens.stride(1) != 1:
        tokens = tokens.contiguous()
    out = torch.zeros(queries.n_queries, page_ids.size, dtype=torch.float32, device=device)
    if page_ids.size == 0 or queries.n_queries == 0 or queries.tokens.shape[0] == 0:
        return out
    page_dtype = tokens.dtype
    if page_dtype not in (torch.float32, torch.float16, torch.bfloat16):
        tokens = tokens.float()
        page_dtype = torch.float32
    q_dtype = queries.tokens.dtype
    upcast = page_dtype != torch.float32 and q_dtype != page_dtype and precision == "fp32"
    # The interpreter cannot dot bfloat16 (triton-lang/triton#11584, "not supported yet"):
    # upcast there. bf16 x bf16 products are exact in fp32, so the result is the same.
    upcast = upcast or (INTERPRET and page_dtype == torch.bfloat16)
    compute = torch.float32 if (upcast or page_dtype == torch.float32) else page_dtype
    dot = {"exact": "ieee", "fp32": "tf32x3"}.get(precision, "tf32") if compute == torch.float32 else "tf32"
    qlen = max(16, triton.next_power_of_2(int(queries.lengths.max())))
    padded = _pad_queries(queries, qlen, compute, device)
    qlens = torch.from_numpy(queries.lengths.astype(np.int32)).to(device)
    offsets = torch.from_numpy(pages.offsets).to(device)
    ids = torch.from_numpy(np.ascontiguousarray(page_ids, dtype=np.int64)).to(device)
    dim = queries.dim

    def grid(meta: dict) -> tuple[int, int]:
        return (page_ids.size, triton.cdiv(queries.n_queries, meta["BLOCK_Q"]))

    _maxsim_kernel[grid](
        padded, qlens, tokens, offsets, ids, out,
        queries.n_queries, page_ids.size, tokens.stride(0),
        D=dim, QLEN=qlen, BLOCK_D=max(16, triton.next_power_of_2(dim)), UPCAST=upcast, DOT=dot,
    )  # fmt: skip
    return out


def best_config() -> triton.Config | None:
    """The config autotune picked last (for benchmarks and tests)."""
    return getattr(_maxsim_kernel, "best_config", None)
