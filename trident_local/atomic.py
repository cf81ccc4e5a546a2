"""Atomic file writes: write to a temp file in the same directory, fsync, rename.

A reader (or a process killed mid-write) sees either the old file or the new
one, never a torn file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np


def _atomic_write(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Run ``write`` on a temp file beside ``path``, fsync it, then rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    _atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def atomic_write_npy(path: Path, array: np.ndarray) -> None:
    """Save an array as .npy atomically (loadable with mmap_mode="r")."""
    _atomic_write(path, lambda f: np.save(f, np.ascontiguousarray(array), allow_pickle=False))


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
