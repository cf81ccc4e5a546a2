"""The fused MaxSim kernels (``amx_maxsim.c``, ``avx512_maxsim.c``): build on first use, call through ctypes.

On a CPU with AMX-BF16 or AVX512-BF16 the fp32-accumulating path runs here instead of a
torch GEMM followed by a max: page tokens are converted to bf16 parts on the fly, multiplied
by the (pre-packed) queries with fp32 accumulation (AMX tiles, or ``vdpbf16ps`` on CPUs
without AMX such as AMD Zen 4), and reduced to per-page maxima while still in registers, so
no ``[query rows, page tokens]`` matrix is ever written. Both kernels take the same
arguments and give the same results. The library is compiled once per source version with
the system C compiler into ``$XDG_CACHE_HOME/trident_kernels`` (``~/.cache`` by default).
Without either instruction set, without a compiler, or with ``TRIDENT_KERNELS_NO_AMX=1``
every caller falls back to the torch path.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from trident_kernels.cpu_features import cpu_flags

HERE = Path(__file__).parent
HEADER = HERE / "maxsim_convert.h"
AVX512_FLAGS = ("-O3", "-shared", "-fPIC", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512bf16")
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
TILE = 16
QUERY_ROW_MULTIPLE = 32  # the kernels walk query tiles in pairs
DEPTH_MULTIPLE = 32  # bf16 values per tile row


@dataclass(frozen=True)
class Variant:
    """One build of the kernel: its source, compiler flags, entry point and the CPU flag it needs."""

    name: str
    source: Path
    flags: tuple[str, ...]
    entry: str
    cpu_flag: str
    init: str | None = None  # called once after loading; 0 = ready
    # fp32-product entry, used for inputs that would need 3-4 bf16 parts (see avx512_maxsim.c)
    entry_f32: str | None = None


VARIANTS = (
    Variant(
        "amx",
        HERE / "amx_maxsim.c",
        (*AVX512_FLAGS, "-mamx-tile", "-mamx-bf16"),
        "maxsim_amx_pages",
        "amx_bf16",
        init="maxsim_amx_init",
    ),
    Variant(
        "avx512_bf16",
        HERE / "avx512_maxsim.c",
        AVX512_FLAGS,
        "maxsim_avx512_pages",
        "avx512_bf16",
        entry_f32="maxsim_avx512_f32_pages",
    ),
)


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "trident_kernels"


def build(compiler: str, variant: Variant = VARIANTS[0]) -> Path:
    """Compile ``variant`` (cached by its source, the shared header and flags); raise on failure."""
    source = variant.source.read_bytes() + HEADER.read_bytes()
    digest = hashlib.sha256(source + " ".join((compiler, *variant.flags)).encode()).hexdigest()[:16]
    target = cache_dir() / f"{variant.source.stem}-{digest}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp_so = Path(tmp) / target.name
        subprocess.run(
            [compiler, *variant.flags, str(variant.source), "-o", str(tmp_so)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        os.replace(tmp_so, target)  # atomic: concurrent builders never see a partial file
    return target


def variant() -> Variant | None:
    """The kernel this CPU runs (AMX first), or None."""
    if os.environ.get("TRIDENT_KERNELS_NO_AMX"):
        return None
    flags = cpu_flags()
    return next((v for v in VARIANTS if v.cpu_flag in flags), None)


@dataclass(frozen=True)
class Kernel:
    """The loaded entry points: bf16 parts (every variant), fp32 products (where cheaper)."""

    name: str
    parts: Callable[..., int]
    f32: Callable[..., int] | None


@functools.cache
def library() -> Kernel | None:
    """The loaded kernel, or None where it cannot run (see module doc)."""
    chosen = variant()
    if chosen is None:
        return None
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        return None
    try:
        lib = ctypes.CDLL(str(build(compiler, chosen)))
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        warnings.warn(f"{chosen.name} MaxSim kernel unavailable, using torch: {detail[-300:]}", stacklevel=2)
        return None
    if chosen.init is not None:
        init = getattr(lib, chosen.init)
        init.restype = ctypes.c_int
        if init() != 0:
            return None
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    parts = getattr(lib, chosen.entry)
    parts.argtypes = [p, i32, i64, i32, p, p, i64, p, i32, i32, p, p]
    parts.restype = ctypes.c_int
    f32 = None
    if chosen.entry_f32 is not None:
        f32 = getattr(lib, chosen.entry_f32)
        f32.argtypes = [p, i32, i64, i32, p, p, i64, p, p, p, p, i32, i32, p]
        f32.restype = ctypes.c_int
    return Kernel(chosen.name, parts, f32)


def available() -> bool:
    return library() is not None


def has_f32_kernel() -> bool:
    """True where inputs needing several bf16 parts run faster as fp32 products (no AMX)."""
    kernel = library()
    return kernel is not None and kernel.f32 is not None


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


def _page_args(tokens: torch.Tensor, starts: np.ndarray, lengths: np.ndarray) -> tuple:
    """The kernels' page arguments, checked; the index arrays go as their ``.ctypes`` views,
    which keep them alive until the call returns."""
    if tokens.dtype not in DTYPE_CODES or tokens.stride(1) != 1:
        raise ValueError("tokens must be fp32/fp16/bf16 with contiguous rows")
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if lengths.size and lengths.min() <= 0:
        raise ValueError("every page must have at least one token")
    return (
        tokens.data_ptr(), DTYPE_CODES[tokens.dtype], tokens.stride(0), tokens.shape[1],
        starts.ctypes, lengths.ctypes, starts.size,
    )  # fmt: skip


def _kernel() -> Kernel:
    kernel = library()
    if kernel is None:
        raise RuntimeError("no fused MaxSim kernel (AMX or AVX512-BF16) on this machine")
    return kernel


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
    kernel = _kernel()
    args = _page_args(tokens, starts, lengths)
    out = torch.empty(len(starts), queries.n_tiles * TILE, dtype=torch.float32)
    picks = (ctypes.c_int * len(page_picks))(*page_picks)
    status = kernel.parts(
        *args, queries.tiles.data_ptr(), queries.n_tiles, len(page_picks), picks, out.data_ptr()
    )
    if status != 0:
        raise MemoryError("MaxSim kernel could not allocate its scratch buffers")
    return out[:, : queries.n_rows].T


class PackedQueryRows:
    """Query rows for the fp32-product kernel: one-part bf16 tiles (the screen), fp32 tiles
    ``[tiles][dim][16 rows]`` and fp32 rows (the re-checks), and each row's screening
    coefficient (2^-7 + 2^-12) |q| (see avx512_maxsim.c); rows padded to 32."""

    SCREEN = 2.0**-7 + 2.0**-12

    def __init__(self, rows: torch.Tensor) -> None:
        n_rows, dim = rows.shape
        self.n_rows = n_rows
        rows_pad = round_up(max(n_rows, 1), QUERY_ROW_MULTIPLE)
        packed = torch.zeros(rows_pad, dim, dtype=torch.float32)
        packed[:n_rows] = rows.float()
        self.rows = packed
        self.tiles = packed.view(rows_pad // TILE, TILE, dim).permute(0, 2, 1).contiguous()
        self.screen = PackedQueryTiles(packed, (0,))
        self.coef = (packed.double().norm(dim=1) * self.SCREEN).float()
        self.n_tiles = rows_pad // TILE


def page_maxima_f32(
    tokens: torch.Tensor, starts: np.ndarray, lengths: np.ndarray, queries: PackedQueryRows
) -> torch.Tensor:
    """As :func:`page_maxima` with fp32 products (the same sums as an fp32 GEMM)."""
    kernel = _kernel()
    if kernel.f32 is None:
        raise RuntimeError(f"the {kernel.name} kernel has no fp32-product entry")
    if queries.tiles.shape[1] != tokens.shape[1]:
        raise ValueError(f"query dim {queries.tiles.shape[1]} != page dim {tokens.shape[1]}")
    args = _page_args(tokens, starts, lengths)
    out = torch.empty(len(starts), queries.n_tiles * TILE, dtype=torch.float32)
    status = kernel.f32(
        *args,
        queries.screen.tiles.data_ptr(), queries.tiles.data_ptr(), queries.rows.data_ptr(), queries.coef.data_ptr(),
        queries.n_tiles, queries.n_rows, out.data_ptr(),
    )  # fmt: skip
    if status != 0:
        raise MemoryError("MaxSim kernel could not allocate its scratch buffers")
    return out[:, : queries.n_rows].T
