"""The fused AMX MaxSim kernel (``amx_maxsim.c``): build on first use, call through ctypes.

On a CPU with AMX-BF16 the fp32-accumulating path runs here instead of a torch GEMM
followed by a max: tiles of page tokens are converted to bf16 parts on the fly, multiplied
by the (pre-packed) queries in AMX tiles with fp32 accumulation, and reduced to per-page
maxima while still in registers, so no ``[query rows, page tokens]`` matrix is ever
written. The library is compiled once per source version with the system C compiler into
``$XDG_CACHE_HOME/trident_kernels`` (``~/.cache`` by default). Without AMX, without a
compiler, or with ``TRIDENT_KERNELS_NO_AMX=1`` every caller falls back to the torch path.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch

SOURCE = Path(__file__).with_name("amx_maxsim.c")
FLAGS = (
    "-O3",
    "-shared",
    "-fPIC",
    "-mavx512f",
    "-mavx512bw",
    "-mavx512vl",
    "-mavx512bf16",
    "-mamx-tile",
    "-mamx-bf16",
)
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
TILE = 16
QUERY_ROW_MULTIPLE = 32  # the kernel walks query tiles in pairs
DEPTH_MULTIPLE = 32  # bf16 values per tile row


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "trident_kernels"


def build(compiler: str) -> Path:
    """Compile ``amx_maxsim.c`` (cached by source and flags); raise on failure."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + " ".join((compiler, *FLAGS)).encode()).hexdigest()[:16]
    target = cache_dir() / f"amx_maxsim-{digest}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp_so = Path(tmp) / target.name
        subprocess.run(
            [compiler, *FLAGS, str(SOURCE), "-o", str(tmp_so)], check=True, capture_output=True, text=True
        )
        os.replace(tmp_so, target)  # atomic: concurrent builders never see a partial file
    return target


@functools.cache
def library() -> ctypes.CDLL | None:
    """The loaded kernel, or None where it cannot run (see module doc)."""
    from trident_kernels.cpu import cpu_has_amx_bf16

    if os.environ.get("TRIDENT_KERNELS_NO_AMX") or not cpu_has_amx_bf16():
        return None
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        return None
    try:
        lib = ctypes.CDLL(str(build(compiler)))
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        warnings.warn(f"AMX MaxSim kernel unavailable, using torch: {detail[-300:]}", stacklevel=2)
        return None
    lib.maxsim_amx_init.restype = ctypes.c_int
    if lib.maxsim_amx_init() != 0:
        return None
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    lib.maxsim_amx_pages.argtypes = [p, i32, i64, i32, p, p, i64, p, i32, i32, p, p]
    lib.maxsim_amx_pages.restype = ctypes.c_int
    return lib


def available() -> bool:
    return library() is not None


def round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def bf16_split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``hi = bf16(x)`` and ``lo = bf16(x - hi)`` (round to nearest even, as in the kernel)."""
    x = x.float()
    hi = x.to(torch.bfloat16)
    return hi, (x - hi.float()).to(torch.bfloat16)


class PackedQueryTiles:
    """Query rows as bf16 parts side by side, padded and in AMX's VNNI B layout."""

    def __init__(self, rows: torch.Tensor, picks: tuple[int, ...]) -> None:
        n_rows, dim = rows.shape
        self.n_rows = n_rows
        self.dim_pad = round_up(dim, DEPTH_MULTIPLE)
        self.n_parts = len(picks)
        rows_pad = round_up(max(n_rows, 1), QUERY_ROW_MULTIPLE)
        parts = bf16_split(rows) if 1 in picks else (rows.to(torch.bfloat16),)
        packed = torch.zeros(rows_pad, self.n_parts, self.dim_pad, dtype=torch.bfloat16)
        for i, pick in enumerate(picks):
            packed[:n_rows, i, :dim] = parts[pick]
        depth = self.n_parts * self.dim_pad
        # B tile (query tile j, depth step k): [16 depth pairs][16 query rows][2]
        tiles = packed.view(rows_pad // TILE, TILE, depth // 32, TILE, 2).permute(0, 2, 3, 1, 4)
        self.tiles = tiles.contiguous()
        self.n_tiles = rows_pad // TILE


def page_maxima(
    tokens: torch.Tensor,
    starts: np.ndarray,
    lengths: np.ndarray,
    queries: PackedQueryTiles,
    page_picks: tuple[int, ...],
) -> torch.Tensor:
    """``[query rows, pages]`` fp32: max over each page's tokens of <query row, token>.

    ``tokens`` is ``[total, dim]`` fp32/fp16/bf16 with unit stride along ``dim``; page i is
    ``tokens[starts[i] : starts[i] + lengths[i]]`` and must not be empty.
    """
    lib = library()
    if lib is None:
        raise RuntimeError("the AMX kernel is not available on this machine")
    if tokens.dtype not in DTYPE_CODES or tokens.stride(1) != 1:
        raise ValueError("tokens must be fp32/fp16/bf16 with contiguous rows")
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if lengths.size and lengths.min() <= 0:
        raise ValueError("every page must have at least one token")
    out = torch.empty(starts.size, queries.n_tiles * TILE, dtype=torch.float32)
    picks = (ctypes.c_int * len(page_picks))(*page_picks)
    status = lib.maxsim_amx_pages(
        tokens.data_ptr(), DTYPE_CODES[tokens.dtype], tokens.stride(0), tokens.shape[1],
        starts.ctypes.data, lengths.ctypes.data, starts.size,
        queries.tiles.data_ptr(), queries.n_tiles, len(page_picks), picks, out.data_ptr(),
    )  # fmt: skip
    if status != 0:
        raise MemoryError("AMX kernel could not allocate its scratch buffers")
    return out[:, : queries.n_rows].T
