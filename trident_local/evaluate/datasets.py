"""Dataset adapters for the QA and retrieval benchmarks: a name -> "module:attr" loader.

A loader reads a dataset file into :class:`~trident_local.evaluate.mmlongbench.QARecord`
(document file name, question, answer, format, gold pages); documents are then
resolved against the index by file name. Adding a dataset: one module with a
``load(path)`` function, and one line in ``_ADAPTERS``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from trident_local.errors import TridentError

if TYPE_CHECKING:
    from trident_local.evaluate.mmlongbench import QARecord

_ADAPTERS: dict[str, str] = {
    "mmlongbench": "trident_local.evaluate.mmlongbench:load_samples",
}


def adapter_names() -> list[str]:
    return list(_ADAPTERS)


def register_adapter(name: str, target: str) -> None:
    """Add a dataset adapter as a lazy "module:attr" loader."""
    _ADAPTERS[name] = target


def load_records(path: str | Path, adapter: str = "mmlongbench") -> list[QARecord]:
    """The dataset at ``path`` read by ``adapter``."""
    if adapter not in _ADAPTERS:
        raise TridentError(f"unknown dataset adapter {adapter!r}; adapters: {', '.join(_ADAPTERS)}")
    module, attr = _ADAPTERS[adapter].split(":")
    return getattr(importlib.import_module(module), attr)(path)
