"""Page-level retrieval metrics: pure functions over one ranked list and a gold set.

Conventions (as in the Trident paper's page-level evaluation): ``ranked`` is a
best-first list of page numbers, ``gold`` a set of gold pages. Precision@K
divides by the number of pages actually returned (at most K), so an adaptive-K
reranker that returns 2 pages is judged on those 2. nDCG uses binary gains.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def recall_at(ranked: Sequence[int], gold: set[int], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


def precision_at(ranked: Sequence[int], gold: set[int], k: int) -> float:
    top = list(ranked[:k])
    return len(set(top) & gold) / len(top) if top else 0.0


def f1_at(ranked: Sequence[int], gold: set[int], k: int) -> float:
    p, r = precision_at(ranked, gold, k), recall_at(ranked, gold, k)
    return 2 * p * r / (p + r) if p + r else 0.0


def mrr(ranked: Sequence[int], gold: set[int]) -> float:
    """Reciprocal rank of the first gold page (0 when none is retrieved)."""
    for i, p in enumerate(ranked, start=1):
        if p in gold:
            return 1.0 / i
    return 0.0


def ndcg_at(ranked: Sequence[int], gold: set[int], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 1) for i, p in enumerate(ranked[:k], start=1) if p in gold)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), k) + 1))
    return dcg / ideal if ideal else 0.0


def page_metrics(ranked: Sequence[int], gold: set[int], k: int, pool_depth: int = 20) -> dict[str, float]:
    """All metrics for one question; keys use the numbers, e.g. ``f1@5``, ``recall@20``."""
    return {
        f"recall@{k}": recall_at(ranked, gold, k),
        f"precision@{k}": precision_at(ranked, gold, k),
        f"f1@{k}": f1_at(ranked, gold, k),
        "mrr": mrr(ranked, gold),
        f"ndcg@{k}": ndcg_at(ranked, gold, k),
    }


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Macro average over questions of every key present in the first row."""
    if not rows:
        return {}
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
