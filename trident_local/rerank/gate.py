"""When the no-model fused order is trusted over the pool's own order.

The fused match reorders the pool and cuts it at the largest score drop
(adaptive K). Where its top page does not stand out, the reorder is a guess, and
on documents it was not designed on it lost pages the pool had found. So the
fused order is used only when its best page leads the runner-up by at least
``MIN_MARGIN`` of the pool's score spread; otherwise the pool's own top ``k_max``
is kept. ``MIN_MARGIN`` is fitted on the calibration document split only (the
margin with the best F1@5 among those whose Recall@5 and MRR do not fall below
the raw pool's there); docs/TRIDENT.md gives the numbers on both splits.
"""

from __future__ import annotations

from collections.abc import Sequence

from trident_local.rerank.fused import adaptive_k

# Fitted on the first 100 answerable questions of the calib split of benchmarks/data/mmlb_doc_split.json
# (rrf pool, M = 20, K_max = 5; benchmarks/calibrate_rerank_gate.py). math.inf would never trust the fused order.
MIN_MARGIN = 0.3


def margin(sorted_scores: Sequence[float]) -> float:
    """The best score's lead over the runner-up, as a share of the spread (best - worst); 0..1."""
    s = list(sorted_scores)
    if len(s) < 2 or s[0] <= s[-1]:
        return 0.0
    return (s[0] - s[1]) / (s[0] - s[-1])


def choose(scores: Sequence[float], k_max: int, min_margin: float = MIN_MARGIN) -> tuple[list[int], bool]:
    """(indices into the pool, in the chosen order; whether the fused order was used)."""
    if k_max < 1:
        raise ValueError("k_max must be >= 1")
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    ranked = [float(scores[i]) for i in order]
    if ranked and margin(ranked) >= min_margin:
        return order[: adaptive_k(ranked, k_max)], True
    return list(range(min(k_max, len(scores)))), False
