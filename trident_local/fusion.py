"""Score fusion shared by the pools, the reranker and the trace retrievers: RRF, min-max, CombSUM.

Reciprocal rank fusion: score(key) = sum over rankings of 1 / (k0 + rank), ranks from 1, k0 = 60
(Cormack et al. 2009); a key missing from a ranking gets nothing from it. Min-max maps scores to
[0, 1] (all-equal scores map to 0, so a flat signal adds nothing). CombSUM averages the min-max
normalized scores of several signals over the same items, which keeps how far ahead the best one is.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

import numpy as np

RRF_K = 60
K = TypeVar("K", bound=Hashable)


def rrf(rankings: Iterable[Iterable[K]], k0: int = RRF_K) -> dict[K, float]:
    """RRF of best-first rankings of keys; the result keeps first-seen order of the keys."""
    out: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            out[key] = out.get(key, 0.0) + 1.0 / (k0 + rank)
    return out


def rrf_ranks(rankings: Iterable[Mapping[K, int]], k0: int = RRF_K) -> dict[K, float]:
    """RRF of rankings given as key -> 1-based rank (ties allowed: items on one page share its rank)."""
    out: dict[K, float] = {}
    for ranking in rankings:
        for key, rank in ranking.items():
            out[key] = out.get(key, 0.0) + 1.0 / (k0 + rank)
    return out


def minmax(x: np.ndarray) -> np.ndarray:
    """``x`` scaled to [0, 1]; zeros when all values are equal (or ``x`` is empty)."""
    if not len(x):
        return np.zeros_like(x)
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def combsum(scores: Sequence[np.ndarray]) -> np.ndarray:
    """The mean of the min-max normalized score arrays (one per signal, aligned on the same items)."""
    if not scores:
        raise ValueError("combsum needs at least one score array")
    return sum(minmax(np.asarray(s)) for s in scores) / len(scores)
