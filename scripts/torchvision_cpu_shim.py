"""Lets PyPI's torchvision import beside the CPU-only torch of the engine environment.

scripts/setup_engine.sh copies this file into .venv-engine's site-packages as
``_trident_torchvision_shim.py`` with a ``.pth`` file that imports it at interpreter start (the engine's
spawned processes included); until something imports torchvision it costs nothing.

Why: PyPI's torchvision wheels for linux x86_64 are CUDA builds. Their compiled operators (``_C.so``)
link ``libtorch_cuda.so``, which a +cpu torch lacks, so they do not load, and ``import torchvision``
then fails on its meta registrations ("operator torchvision::nms does not exist"). What image processors
use, torchvision's Python transforms on torch tensors, needs none of those operators: defining the two
operator schemas the import looks up, nms and qnms, just before torchvision is first imported is enough
(transformers' Qwen2-VL processor, which always builds its video processor on torchvision, then works).
The operators themselves stay unavailable: a call to ``torchvision.ops.nms`` still fails.
"""

import contextlib
import sys
from importlib.abc import MetaPathFinder

SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_library = []  # the Library object, kept alive: its definitions go when it is collected


class BeforeTorchvision(MetaPathFinder):
    """Defines the schemas when ``torchvision`` is first looked up, then lets the regular finders import it."""

    done = False

    def find_spec(self, name, path=None, target=None):
        if name != "torchvision" or self.done:
            return None
        self.done = True  # once (not removed from sys.meta_path: the import system is iterating over it)
        try:
            import torch

            lib = torch.library.Library("torchvision", "FRAGMENT")
            for schema in SCHEMAS:
                with contextlib.suppress(RuntimeError):  # already defined: torchvision's own operators loaded
                    lib.define(schema)
            _library.append(lib)
        except Exception:  # noqa: BLE001 - never break an import; torchvision then fails as it would have
            pass
        return None


if not any(isinstance(f, BeforeTorchvision) for f in sys.meta_path):
    sys.meta_path.insert(0, BeforeTorchvision())
