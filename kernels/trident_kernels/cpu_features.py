"""What this CPU can do, read from /proc/cpuinfo: no torch, nothing compiled.

The fused kernels (:mod:`trident_kernels.amx`), the torch path's bf16 GEMM
(:mod:`trident_kernels.cpu`) and the CPU text embedders of ``trident_local`` all ask
here, so that the embedder's torch-free start-up can ask too.
"""

from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (``amx_bf16``, ``avx512_bf16``, ...); empty where /proc/cpuinfo is unreadable."""
    try:
        return frozenset(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return frozenset()


def cpu_has_fast_bf16() -> bool:
    """True when this CPU multiplies bf16 natively (AMX or AVX512-BF16), per /proc/cpuinfo.

    Only there is bf16 faster than float32 (about 2x for MiniLM under autocast); elsewhere
    oneDNN emulates it and it is slower."""
    return "amx_bf16" in cpu_flags() or "avx512_bf16" in cpu_flags()
