"""int8 MaxSim: per-token symmetric quantisation of pages (and queries), int8 GEMM.

Why: int8 pages take 1/4 of fp32 (1/2 of fp16) and, on CPUs with VNNI/AMX, an int8 GEMM
with exact int32 accumulation runs several times faster than fp32. Each token keeps one
fp32 scale, so ``<q, p> ~= s_q * s_p * <q8, p8>``; since ``s_q > 0`` it factors out of the
max over page tokens. The error this costs is measured in ``benchmarks/maxsim.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from trident_kernels.blocks import block_tokens_for, plan_blocks, segment_max, sum_query_rows
from trident_kernels.cpu import MAX_QUERY_ROWS, columns
from trident_kernels.packed import Array, PackedPages, as_packed, as_tensor, gather_tokens
from trident_kernels.queries import Queries, pack_queries
from trident_kernels.scoring import PageIndices, resolve_page_ids

QMAX = 127.0
SCALES_FILE = "scales.npy"


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-row int8: ``x ~= codes * scales[:, None]``."""
    x = x.float()
    scales = x.abs().amax(dim=1).clamp_min(1e-12) / QMAX
    codes = torch.round(x / scales[:, None]).clamp_(-QMAX, QMAX).to(torch.int8)
    return codes, scales


@dataclass(frozen=True, eq=False)
class QuantizedPages:
    """int8 codes packed like :class:`PackedPages` plus one fp32 scale per token."""

    codes: PackedPages  # int8 tokens
    scales: Array  # [total_tokens] float32

    @property
    def n_pages(self) -> int:
        return self.codes.n_pages

    def __len__(self) -> int:
        return self.n_pages

    def save(self, directory: str | Path) -> None:
        self.codes.save(directory)
        scales = self.scales.cpu().numpy() if isinstance(self.scales, torch.Tensor) else self.scales
        np.save(Path(directory) / SCALES_FILE, scales)

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = True) -> QuantizedPages:
        codes = PackedPages.load(directory, mmap=mmap)
        return cls(codes, np.load(Path(directory) / SCALES_FILE, mmap_mode="r" if mmap else None))


def quantize_pages(pages: PackedPages | Sequence[Array], *, chunk_tokens: int = 1 << 18) -> QuantizedPages:
    """Quantise chunk by chunk so a memory-mapped index never needs an fp32 copy."""
    packed = as_packed(pages)
    tokens = as_tensor(packed.tokens)
    codes = torch.empty(tokens.shape, dtype=torch.int8, device=tokens.device)
    scales = torch.empty(tokens.shape[0], dtype=torch.float32, device=tokens.device)
    for start in range(0, tokens.shape[0], chunk_tokens):
        stop = min(start + chunk_tokens, tokens.shape[0])
        codes[start:stop], scales[start:stop] = quantize_rows(tokens[start:stop])
    return QuantizedPages(PackedPages(codes, packed.offsets), scales)


def _int8_sims(query_codes: torch.Tensor, page_codes: torch.Tensor) -> torch.Tensor:
    """``[query rows, page tokens]`` int32 dot products (exact)."""
    if page_codes.device.type == "cpu":
        return torch._int_mm(query_codes, page_codes.T)
    # torch._int_mm on CUDA has shape constraints; an fp32 GEMM of int8 values below
    # 2**24 per dot is exact too.
    return (query_codes.float() @ page_codes.float().T).round_().to(torch.int32)


def maxsim_int8(
    queries: Queries,
    pages: QuantizedPages,
    *,
    query_mask: Array | None = None,
    page_indices: PageIndices = None,
    block_tokens: int | None = None,
) -> torch.Tensor:
    """Approximate MaxSim ``[n_queries, n_pages]`` fp32 from int8 pages and int8 queries.

    Same conventions as :func:`kernels.maxsim` (empty pages/queries score 0).
    """
    packed = pages.codes
    scales = as_tensor(pages.scales)
    q = pack_queries(queries, query_mask)
    ids = resolve_page_ids(page_indices, packed.n_pages)
    device = packed.device
    out = torch.zeros(q.n_queries, ids.size, dtype=torch.float32, device=device)
    if q.dim != packed.dim:
        raise ValueError(f"query dim {q.dim} != page dim {packed.dim}")
    chunks = []
    for chunk in q.split(MAX_QUERY_ROWS):
        codes, q_scales = quantize_rows(chunk.queries.tokens.to(device))
        chunks.append((chunk, codes, q_scales))
    if not chunks or ids.size == 0:
        return out
    max_rows = max(codes.shape[0] for _, codes, _ in chunks)
    budget = block_tokens or block_tokens_for(max_rows)
    # Reused fp32 tile; a block holds at most budget + one page of tokens.
    buffer = torch.empty((budget + int(packed.lengths.max())) * max_rows, dtype=torch.float32, device=device)
    for block in plan_blocks(packed.lengths, ids, budget):
        page_codes = as_tensor(gather_tokens(packed.tokens, packed.offsets, block.page_ids))
        page_codes = page_codes.to(device).contiguous()
        page_scales = as_tensor(gather_tokens(scales, packed.offsets, block.page_ids))
        page_scales = page_scales.to(device=device, dtype=torch.float32)
        cols = columns(block.positions)
        for chunk, codes, q_scales in chunks:
            sims_int = _int8_sims(codes, page_codes)
            # Dequantise in place into the fp32 tile: 3-5x faster than a mixed-dtype multiply.
            sims = buffer[: sims_int.numel()].view(sims_int.shape).copy_(sims_int).mul_(page_scales)
            page_max = segment_max(sims, block.lengths, block.uniform_length) * q_scales[:, None]
            out[chunk.start : chunk.stop, cols] = sum_query_rows(page_max, chunk.queries)
    return out
