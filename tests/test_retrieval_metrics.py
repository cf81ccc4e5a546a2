"""Page metrics against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from trident_local.evaluate.retrieval_metrics import (
    f1_at,
    mean_metrics,
    mrr,
    ndcg_at,
    page_metrics,
    precision_at,
    recall_at,
)

RANKED = [7, 3, 9, 1, 4, 8]
GOLD = {3, 4, 12}


def test_recall_precision_f1() -> None:
    # top-5 = 7,3,9,1,4 holds gold 3 and 4: recall 2/3, precision 2/5, F1 = 2*(0.4*0.6667)/(1.0667) = 0.5
    assert recall_at(RANKED, GOLD, 5) == pytest.approx(2 / 3)
    assert precision_at(RANKED, GOLD, 5) == pytest.approx(0.4)
    assert f1_at(RANKED, GOLD, 5) == pytest.approx(0.5)


def test_precision_divides_by_pages_returned() -> None:
    # an adaptive-K list of 2 pages with 1 hit has precision 1/2, not 1/5
    assert precision_at([3, 5], GOLD, 5) == pytest.approx(0.5)
    assert precision_at([], GOLD, 5) == 0.0


def test_mrr() -> None:
    assert mrr(RANKED, GOLD) == pytest.approx(1 / 2)
    assert mrr([1, 2], GOLD) == 0.0


def test_ndcg() -> None:
    # hits at ranks 2 and 5: DCG = 1/log2(3) + 1/log2(6); ideal for 3 gold = 1 + 1/log2(3) + 1/2
    dcg = 1 / math.log2(3) + 1 / math.log2(6)
    ideal = 1 + 1 / math.log2(3) + 0.5
    assert ndcg_at(RANKED, GOLD, 5) == pytest.approx(dcg / ideal)
    assert ndcg_at([3, 4, 12], GOLD, 5) == pytest.approx(1.0)


def test_page_metrics_keys_and_mean() -> None:
    m = page_metrics(RANKED, GOLD, 5)
    assert set(m) == {"recall@5", "precision@5", "f1@5", "mrr", "ndcg@5"}
    avg = mean_metrics([{"mrr": 1.0}, {"mrr": 0.5}])
    assert avg == {"mrr": 0.75}
