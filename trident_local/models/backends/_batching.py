"""Run a batch so that one bad request cannot sink the others."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def run_isolating(
    items: Sequence[T], run: Callable[[Sequence[T]], list[R]], on_error: Callable[[T, Exception], R]
) -> list[R]:
    """``run(items)``; if the batch raises, halve it and retry, down to single items.

    The good requests stay batched (log2(n) extra calls per bad one) and the
    bad one gets ``on_error``'s result instead of an exception.
    """
    if not items:
        return []
    try:
        return run(items)
    except Exception as e:
        if len(items) == 1:
            return [on_error(items[0], e)]
        mid = len(items) // 2
        return run_isolating(items[:mid], run, on_error) + run_isolating(items[mid:], run, on_error)
