"""Score fusion: RRF by hand-computed values, min-max, CombSUM."""

from __future__ import annotations

import numpy as np
import pytest

from trident_local.fusion import combsum, minmax, rrf, rrf_ranks
from trident_local.retrieve.base import Hit
from trident_local.retrieve.rrf import rrf_fuse


def test_rrf_hand_computed() -> None:
    scores = rrf([["a", "b", "c"], ["c", "a"]])
    assert scores["a"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 2))
    assert scores["b"] == pytest.approx(1 / (60 + 2))  # missing from the second ranking: nothing from it
    assert scores["c"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))
    assert rrf([["x"]], k0=1)["x"] == pytest.approx(0.5)


def test_rrf_ranks_ties() -> None:
    scores = rrf_ranks([{1: 1, 2: 1}, {2: 3}])  # 1 and 2 tie at rank 1 (one page)
    assert scores == pytest.approx({1: 1 / 61, 2: 1 / 61 + 1 / 63})


def test_rrf_fuse_orders_hits() -> None:
    a = [Hit("d", 1, 9.0, "bm25"), Hit("d", 2, 5.0, "bm25"), Hit("d", 3, 1.0, "bm25")]
    b = [Hit("d", 3, 0.9, "dense"), Hit("d", 1, 0.5, "dense")]
    fused = rrf_fuse([a, b])
    assert [h.page for h in fused] == [1, 3, 2]
    assert fused[1].score == pytest.approx(1 / 63 + 1 / 61)
    assert {h.pool for h in fused} == {"rrf"}


def test_minmax_and_combsum() -> None:
    np.testing.assert_allclose(minmax(np.array([2.0, 4.0, 3.0])), [0.0, 1.0, 0.5])
    np.testing.assert_allclose(minmax(np.array([7.0, 7.0])), [0.0, 0.0])  # a flat signal adds nothing
    assert minmax(np.zeros(0)).shape == (0,)
    np.testing.assert_allclose(combsum([np.array([0.0, 10.0, 5.0]), np.array([1.0, 0.0, 1.0])]), [0.5, 0.5, 0.75])
    with pytest.raises(ValueError):
        combsum([])


def test_z_fuse_keeps_a_members_margin_where_rrf_loses_it() -> None:
    from trident_local.retrieve.fused import z_fuse

    # bm25 is sure of page 1 (far ahead); dense puts page 2 a hair ahead of page 1
    bm25 = [Hit("d", 1, 30.0, "bm25"), Hit("d", 2, 2.0, "bm25"), Hit("d", 3, 1.9, "bm25"), Hit("d", 4, 1.8, "bm25")]
    dense = [Hit("d", 2, 0.60, "dense"), Hit("d", 1, 0.58, "dense"), Hit("d", 3, 0.40, "dense"),
             Hit("d", 4, 0.35, "dense")]
    assert z_fuse([bm25, dense], [0.4, 0.6])[0].page == 1
    assert rrf_fuse([bm25, dense])[0].page in (1, 2)  # a tie on ranks: the margin is gone


def test_z_fuse_flat_member_adds_nothing_and_missing_pages_score_lowest() -> None:
    from trident_local.retrieve.fused import z_fuse

    a = [Hit("d", 5, 3.0, "bm25"), Hit("d", 6, 1.0, "bm25")]
    flat = [Hit("d", 6, 0.7, "dense"), Hit("d", 7, 0.7, "dense")]
    fused = z_fuse([a, flat], [0.5, 0.5])
    assert [h.page for h in fused][:2] == [5, 6] and {h.pool for h in fused} == {"fused"}
    assert fused[-1].page == 7  # not returned by bm25: its lowest score there
    assert z_fuse([[], []], [0.5, 0.5]) == []
