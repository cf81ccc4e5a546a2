"""When the no-model fused order is trusted over the pool's own order, and when it may cut K.

The fused match reorders the pool; where its top page does not stand out, the
reorder is a guess, and on documents it was not designed on it lost pages the
pool had found. Two levels, both on the fused score's margin (the best page's
lead over the runner-up as a share of the pool's score spread):

- ``margin >= ORDER_MARGIN``: the fused order, still ``k_max`` pages (nothing the
  pool found in its top ``k_max`` is dropped for a guess);
- ``margin >= CUT_MARGIN`` as well: the adaptive-K cut (at the largest drop between
  consecutive scores among the first K_max + 1), a clear winner alone;
- below ``ORDER_MARGIN``: the pool's own top ``k_max``.

Both margins are fitted on the calibration document split only
(``benchmarks/calibrate_rerank_gate.py``: among the pairs whose Recall@5 and MRR
are not below the raw pool's there, the one with the largest smaller gain, ties
broken by F1@5). docs/TRIDENT.md gives the numbers on both splits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

# Fitted on the 292 answerable calib questions of benchmarks/data/mmlb_doc_split.json
# (rrf pool, M = 20, K_max = 5). math.inf never trusts the fused order (or never cuts).
ORDER_MARGIN = 0.15
CUT_MARGIN = 0.5

Decision = Literal["pool", "fused", "fused-cut"]


def adaptive_k(sorted_scores: Sequence[float], k_max: int) -> int:
    """Cut at the largest drop among the first k_max + 1 scores (1 <= K <= k_max)."""
    s = list(sorted_scores)[: k_max + 1]
    if len(s) <= 1:
        return len(s)
    gaps = [s[i] - s[i + 1] for i in range(len(s) - 1)]
    if len(s) <= k_max:  # fewer candidates than K_max + 1: the tail may be the cut
        return int(np.argmax(gaps)) + 1 if max(gaps) > 0 else len(s)
    return int(np.argmax(gaps)) + 1 if max(gaps) > 0 else k_max


def margin(sorted_scores: Sequence[float]) -> float:
    """The best score's lead over the runner-up, as a share of the spread (best - worst); 0..1."""
    s = list(sorted_scores)
    if len(s) < 2 or s[0] <= s[-1]:
        return 0.0
    return (s[0] - s[1]) / (s[0] - s[-1])


def choose(
    scores: Sequence[float],
    k_max: int,
    order_margin: float = ORDER_MARGIN,
    cut_margin: float = CUT_MARGIN,
) -> tuple[list[int], Decision]:
    """(indices into the pool, in the chosen order; which of the three levels decided)."""
    if k_max < 1:
        raise ValueError("k_max must be >= 1")
    if cut_margin < order_margin:
        raise ValueError("cut_margin must be >= order_margin (a cut implies the fused order)")
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    ranked = [float(scores[i]) for i in order]
    lead = margin(ranked) if ranked else 0.0
    if ranked and not math.isinf(cut_margin) and lead >= cut_margin:
        return order[: adaptive_k(ranked, k_max)], "fused-cut"
    if ranked and not math.isinf(order_margin) and lead >= order_margin:
        return order[:k_max], "fused"
    return list(range(min(k_max, len(scores)))), "pool"
