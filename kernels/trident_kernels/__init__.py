"""Performance core: late-interaction (MaxSim) scoring over packed multi-vector pages.

Pure functions over tensors; knows nothing of documents. CUDA pages run a fused Triton
kernel, everything else a cache-blocked torch path. See benchmarks/README.md for numbers.
"""

from trident_kernels.maxsim import maxsim, maxsim_reference, triton_available
from trident_kernels.packed import PackedPages, pack_pages
from trident_kernels.quant import QuantizedPages, maxsim_int8, quantize_pages
from trident_kernels.queries import PackedQueries, pack_queries
from trident_kernels.topk import maxsim_topk

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
