"""Dataset adapters for the QA and retrieval benchmarks: a name -> "module:attr" loader.

A loader reads a dataset file into :class:`~trident_local.evaluate.mmlongbench.QARecord`
(document file name, question, answer, format, gold pages); documents are then
resolved against the index by file name. Adding a dataset: one module with a
``load(path)`` function, and one line in ``_REGISTRY`` below.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from trident_local.lazy_registry import LazyRegistry

if TYPE_CHECKING:
    from trident_local.evaluate.mmlongbench import QARecord

_REGISTRY = LazyRegistry("dataset adapter", "adapters", {
    "mmlongbench": "trident_local.evaluate.mmlongbench:load_samples",
})


def adapter_names() -> list[str]:
    return _REGISTRY.names()


def register_adapter(name: str, target: str) -> None:
    """Add a dataset adapter as a lazy "module:attr" loader."""
    _REGISTRY.register(name, target)


def load_records(path: str | Path, adapter: str = "mmlongbench") -> list[QARecord]:
    """The dataset at ``path`` read by ``adapter``."""
    return _REGISTRY.load(adapter)(path)
