"""Citation metrics against hand-computed values, and the document-cluster bootstrap."""

from __future__ import annotations

import pytest

from trident_local.evaluate.citations_metrics import (
    METRICS,
    Outcome,
    binary_accuracy,
    bootstrap_ci,
    compute_metrics,
    contributions,
    counts,
    fix_reach,
    window_reachable,
)


def o(doc, label, cited, gold, verdict, action, new=None, loc=None, n=20) -> Outcome:
    return Outcome(f"{doc}{cited}{label}", doc, label, cited, gold, verdict, action, new, n, [], loc)


# Nine instances over three documents; the expected values are worked out by hand below.
HAND = [
    o("A", "supported", 3, [3], "supported", "keep"),  # 1: right, kept
    o("A", "supported", 5, [5], "unsupported", "remove"),  # 2: missed, lost
    o("A", "wrong_location", 4, [3], "unsupported", "fix-page", 3, "window"),  # 3: detected, fixed to gold
    o("B", "wrong_location", 2, [1], "unsupported", "fix-page", 3, "window"),  # 4: detected, fixed to a wrong page
    o("B", "wrong_location", 10, [1], "supported", "keep", None, "outside"),  # 5: missed, kept
    o("B", "unsupported", 1, [1], "unsupported", "remove"),  # 6: detected, removed
    o("C", "unsupported", 2, [2], "supported", "keep"),  # 7: missed, kept
    o("C", "supported", 2, [2], "inconsistent", "flag"),  # 8: not "supported" -> binary error; kept (flagged)
    o("C", "wrong_location", 3, [2], "unsupported", "remove", None, "window"),  # 9: detected, removed
]


def test_metrics_match_hand_computed_values() -> None:
    m = compute_metrics(HAND, window=2)
    # binary: right on 1, 3, 4, 6, 9 -> 5/9
    assert m["binary_accuracy"] == pytest.approx(5 / 9)
    assert m["supported_recall"] == pytest.approx(1 / 3)  # 1 of {1, 2, 8}
    assert m["wrong_location_recall"] == pytest.approx(3 / 4)  # 3, 4, 9 of {3, 4, 5, 9}
    assert m["unsupported_recall"] == pytest.approx(1 / 2)  # 6 of {6, 7}
    assert m["precision_before"] == pytest.approx(3 / 9)
    # remaining after repair: 1, 3 (->3), 4 (->3), 5, 7, 8; correct: 1, 3, 8
    assert m["precision_after"] == pytest.approx(3 / 6)
    assert m["retention"] == pytest.approx(2 / 3)  # 1 and 8 of {1, 2, 8}
    assert m["coverage"] == pytest.approx(4 / 6)  # 3, 4, 6, 9 of the six errors
    assert m["coverage_strict"] == pytest.approx(4 / 6)
    # window-reachable wrong locations: 3 (|4-3|=1), 4 (|2-1|=1), 9 (|3-2|=1); exact fix: 3 only
    assert m["fix_reach"] == pytest.approx(1 / 3)
    assert binary_accuracy(HAND) == m["binary_accuracy"] and fix_reach(HAND, 1) == pytest.approx(1 / 3)
    assert fix_reach(HAND, 0) is None  # nothing is reachable with no window
    assert set(m) == set(METRICS)


def test_flagged_errors_count_as_covered_but_not_strictly() -> None:
    outs = [o("A", "unsupported", 1, [1], "inconsistent", "flag"), o("A", "wrong_location", 6, [1], "unknown", "flag")]
    m = compute_metrics(outs)
    assert m["coverage"] == 1.0 and m["coverage_strict"] == 0.0
    assert m["precision_after"] == 0.0 and m["supported_recall"] is None and m["retention"] is None


def test_window_reachability_respects_document_length() -> None:
    assert window_reachable(o("A", "wrong_location", 5, [7], "x", "keep"), 2)
    assert not window_reachable(o("A", "wrong_location", 5, [8], "x", "keep"), 2)
    assert not window_reachable(o("A", "wrong_location", 5, [7], "x", "keep", n=6), 2)  # gold 7 beyond 6 pages
    assert contributions(o("A", "wrong_location", 5, [7], "unsupported", "fix-page", 7), 2)["fix_reach"] == (1, 1)


def test_counts() -> None:
    c = counts(HAND)
    assert c["instances"] == 9 and c["documents"] == 3
    assert c["by_label"] == {"supported": 3, "wrong_location": 4, "unsupported": 2}
    assert c["actions_by_label"]["wrong_location"] == {"fix-page": 2, "keep": 1, "remove": 1}
    assert c["window_reachable_wrong_location"] == 3


def test_document_cluster_bootstrap() -> None:
    ci = bootstrap_ci(HAND, n_boot=500, seed=1)
    assert ci == bootstrap_ci(HAND, n_boot=500, seed=1)  # seeded
    point = compute_metrics(HAND)
    for m in ("binary_accuracy", "precision_after", "retention"):
        lo, hi = ci[m]
        assert 0.0 <= lo <= point[m] <= hi <= 1.0
    assert ci["precision_before"][0] < ci["precision_before"][1]  # documents differ in their label mix
    # identical documents: every replicate has the same ratio -> a zero-width interval
    same = [o(d, lab, 2, [2], v, a) for d in "ABCD" for lab, v, a in
            [("supported", "supported", "keep"), ("unsupported", "supported", "keep")]]
    ci = bootstrap_ci(same, n_boot=200)
    assert ci["binary_accuracy"] == (0.5, 0.5) and ci["fix_reach"] is None
    assert bootstrap_ci([], n_boot=10)["binary_accuracy"] is None
    # one document: resampling documents cannot vary anything
    one = [x for x in HAND if x.doc == "A"]
    lo, hi = bootstrap_ci(one, n_boot=100)["binary_accuracy"]
    assert lo == hi == compute_metrics(one)["binary_accuracy"]
