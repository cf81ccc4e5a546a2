"""The no-model rerank's confidence gate: the fused order only when its top page clearly leads."""

from __future__ import annotations

import math

import pytest

from trident_local.rerank.gate import choose, margin


def test_margin_is_the_leads_share_of_the_spread() -> None:
    assert margin([1.0, 0.5, 0.0]) == pytest.approx(0.5)
    assert margin([1.0, 1.0, 0.0]) == 0.0
    assert margin([0.3]) == 0.0 and margin([]) == 0.0


def test_confident_fused_order_is_used_with_adaptive_k() -> None:
    scores = [0.1, 0.9, 0.2, 0.15, 0.12, 0.11]  # pool order; pool index 1 stands out
    picked, trusted = choose(scores, 5, min_margin=0.5)
    assert trusted and picked == [1]


def test_unconfident_fused_order_keeps_the_pool_order() -> None:
    scores = [0.5, 0.52, 0.51, 0.1, 0.2, 0.3]  # no clear leader
    picked, trusted = choose(scores, 5, min_margin=0.5)
    assert not trusted and picked == [0, 1, 2, 3, 4]
    picked, trusted = choose(scores, 5, min_margin=math.inf)
    assert not trusted and picked == [0, 1, 2, 3, 4]
    assert choose([0.4, 0.2], 5, 0.1) == ([0], True)
    with pytest.raises(ValueError):
        choose(scores, 0)
