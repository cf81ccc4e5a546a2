"""The no-model rerank's confidence gate: the pool's order unless the fused top page clearly leads,
the adaptive-K cut only when it leads by far."""

from __future__ import annotations

import math

import pytest

from trident_local.rerank.gate import choose, margin


def test_margin_is_the_leads_share_of_the_spread() -> None:
    assert margin([1.0, 0.5, 0.0]) == pytest.approx(0.5)
    assert margin([1.0, 1.0, 0.0]) == 0.0
    assert margin([0.3]) == 0.0 and margin([]) == 0.0


def test_very_confident_fused_order_is_cut_at_adaptive_k() -> None:
    scores = [0.1, 0.9, 0.2, 0.15, 0.12, 0.11]  # pool order; pool index 1 stands out (margin 0.875)
    assert choose(scores, 5, order_margin=0.2, cut_margin=0.5) == ([1], "fused-cut")


def test_confident_fused_order_keeps_k_max_pages() -> None:
    scores = [0.1, 0.9, 0.6, 0.15, 0.12, 0.11]  # margin 0.375: reorder, but no cut
    picked, decision = choose(scores, 5, order_margin=0.2, cut_margin=0.5)
    assert decision == "fused" and picked == [1, 2, 3, 4, 5]
    assert choose(scores, 5, order_margin=0.2, cut_margin=math.inf)[1] == "fused"


def test_unconfident_fused_order_keeps_the_pool_order() -> None:
    scores = [0.5, 0.52, 0.51, 0.1, 0.2, 0.3]  # no clear leader
    assert choose(scores, 5, order_margin=0.5, cut_margin=0.8) == ([0, 1, 2, 3, 4], "pool")
    assert choose(scores, 5, order_margin=math.inf, cut_margin=math.inf) == ([0, 1, 2, 3, 4], "pool")
    assert choose([0.9, 0.1, 0.2], 5, order_margin=math.inf, cut_margin=math.inf)[1] == "pool"
    assert choose([0.4, 0.2], 5, 0.1, 0.1) == ([0], "fused-cut")
    assert choose([], 5) == ([], "pool")
    with pytest.raises(ValueError):
        choose(scores, 0)
    with pytest.raises(ValueError, match="cut_margin"):
        choose(scores, 5, order_margin=0.5, cut_margin=0.2)
