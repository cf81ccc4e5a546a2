"""Device and dtype choice shared by the torch-based backends."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def gpu_device_nodes() -> bool:
    """False only on Linux with no NVIDIA, AMD (ROCm) or WSL GPU device node: then "auto" is the
    CPU without importing torch (about 2 s of a CPU start-up). Elsewhere torch decides."""
    if not sys.platform.startswith("linux"):
        return True
    return any(Path(p).exists() for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg"))


def pick_device(device: str = "auto") -> str:
    """ "auto" -> "cuda" when torch sees a GPU, else "cpu"; anything else is passed through."""
    if device != "auto":
        return device
    if not gpu_device_nodes():
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_dtype(dtype: str, device: str) -> Any:
    """Map a profile dtype name to a torch dtype; "auto" is bfloat16 on CUDA, float32 on CPU.

    float32 on CPU because bf16 matmuls there are slow on most x86 cores and
    tiny random models overflow less.
    """
    import torch

    if dtype in ("auto", "", None):
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    aliases = {
        "bf16": "bfloat16",
        "fp16": "float16",
        "half": "float16",
        "fp32": "float32",
        "float": "float32",
    }
    name = aliases.get(dtype, dtype)
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}; use auto, bfloat16, float16 or float32")
    return dt
