"""A document split file: {"calib": [doc names], "test": [doc names], ...}, and the records of one split.

Written by ``benchmarks/make_doc_split.py``; thresholds are fitted on "calib" and reported on "test".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from trident_local.errors import TridentError

T = TypeVar("T")


def split_docs(path: str | Path, split: str) -> set[str]:
    """The document names of ``split`` in the split file at ``path``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise TridentError(f"cannot read the split file {path}: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get(split), list):
        names = [k for k, v in data.items() if isinstance(v, list)] if isinstance(data, dict) else []
        raise TridentError(f"{path} has no split {split!r} (splits: {', '.join(names) or 'none'})")
    return set(data[split])


def in_split(records: Sequence[T], docs: set[str], key: str = "doc_name") -> list[T]:
    """The records whose document (attribute ``key``) is in ``docs``."""
    return [r for r in records if getattr(r, key) in docs]
