"""Performance core: late-interaction (MaxSim) scoring over packed multi-vector pages.

Pure functions over tensors; knows nothing of documents. CUDA pages run a fused Triton
kernel, everything else a cache-blocked torch path. See benchmarks/README.md for numbers.

The names below are imported on first use, so that importing a torch-free submodule
(:mod:`trident_kernels.cpu_features`, which the CPU embedder's torch-free start-up reads)
does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trident_kernels.packed import PackedPages, pack_pages
    from trident_kernels.quant import QuantizedPages, maxsim_int8, quantize_pages
    from trident_kernels.queries import PackedQueries, pack_queries
    from trident_kernels.scoring import maxsim, maxsim_reference, triton_available
    from trident_kernels.topk import maxsim_topk

# public name -> the submodule that defines it
_EXPORTS = {
    "PackedPages": "packed",
    "PackedQueries": "queries",
    "QuantizedPages": "quant",
    "maxsim": "scoring",
    "maxsim_int8": "quant",
    "maxsim_reference": "scoring",
    "maxsim_topk": "topk",
    "pack_pages": "packed",
    "pack_queries": "queries",
    "quantize_pages": "quant",
    "triton_available": "scoring",
}

__all__ = [
    "PackedPages",
    "PackedQueries",
    "QuantizedPages",
    "maxsim",
    "maxsim_int8",
    "maxsim_reference",
    "maxsim_topk",
    "pack_pages",
    "pack_queries",
    "quantize_pages",
    "triton_available",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
