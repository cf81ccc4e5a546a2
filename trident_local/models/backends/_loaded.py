"""Weights loaded once per process: several profiles and roles over one folder share one copy."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

_LOADED: dict[Hashable, Any] = {}
_LOCK = threading.Lock()


def load_once(key: Hashable, load: Callable[[], Any]) -> Any:
    """``load()``'s result, computed the first time ``key`` is asked for (the lock is held while loading)."""
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = load()
        return _LOADED[key]
