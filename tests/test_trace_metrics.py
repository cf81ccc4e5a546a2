"""LitTraceQA scorer against hand-computed cases (ranx style: every expected value worked out in the comment)."""

from __future__ import annotations

import pytest

from trident_local.evaluate.trace_metrics import (
    PRF,
    aggregate,
    answer_score,
    evidence_compatible,
    evidence_prf,
    free_form_correct,
    match_evidence,
    normalize_label,
    numbers_match,
    paper_prf,
    prf,
    score_predictions,
    score_record,
    table_prf,
)
from trident_local.trace.formats import mc_letter


def approx(p: PRF, precision: float, recall: float, f1: float) -> None:
    assert (p.precision, p.recall, p.f1) == pytest.approx((precision, recall, f1))


def ev(paper: str, page: int, type_: str, obj: str | None = None) -> dict:
    return {"paper": paper, "page": page, "type": type_, "object": obj}


# -- counts and papers ------------------------------------------------------------------------------------------
def test_prf_conventions() -> None:
    approx(prf(0, 0, 0), 1, 1, 1)  # nothing to find, nothing predicted
    approx(prf(0, 0, 2), 0, 0, 0)  # nothing predicted
    approx(prf(0, 3, 0), 0, 1, 0)  # predictions, nothing to find
    approx(prf(1, 2, 4), 0.5, 0.25, 2 * 0.5 * 0.25 / 0.75)  # F1 = 1/3


def test_paper_ids_are_normalized_and_deduplicated() -> None:
    # "arXiv:2310.07609V1" = "2310.07609v1"; "https://doi.org/10.1162/X" = "10.1162/x"; duplicate counts once
    pred = ["2303.05039v2", "arXiv:2310.07609V1", "https://doi.org/10.1162/TACL_A_00660", "2303.05039v2", "other"]
    gold = ["2303.05039v2", "2310.07609v1", "10.1162/tacl_a_00660"]
    approx(paper_prf(pred, gold), 3 / 4, 1.0, 2 * 0.75 / 1.75)  # 4 distinct predicted, 3 right: F1 = 6/7


def test_extra_papers_cost_precision_only() -> None:
    approx(paper_prf(["a", "b", "c", "d"], ["a"]), 0.25, 1.0, 0.4)  # F1 = 2*.25/1.25
    approx(paper_prf(["a"], ["a", "b"]), 1.0, 0.5, 2 / 3)


# -- evidence -----------------------------------------------------------------------------------------------------
def test_labels_compare_without_case_spaces_or_abbreviations() -> None:
    assert normalize_label("Table 2") == normalize_label(" table2 ") == "table2"
    assert normalize_label("Fig. 3") == normalize_label("FIGURE 3") == "figure3"
    assert normalize_label("(2)", "equation") == normalize_label("Eq. 2") == normalize_label("Equation (2)") == "eq2"
    assert normalize_label("2", "equation") == "eq2"
    assert normalize_label("Algorithm 1") == "algorithm1"
    assert normalize_label(None) == normalize_label("") == ""


@pytest.mark.parametrize(("pred_obj", "gold_obj", "match"), [
    ("table 2", "Table 2", True),  # case and space
    ("Table 3", "Table 2", False),  # both give a label: they must agree
    (None, "Table 2", True),  # only gold gives one: not compared
    ("Table 2", None, True),  # only the prediction gives one
    ("p3:table:1", "Table 2", True),  # an internal id is not comparable with a printed label
    ("p3:table:1", "p3:table:2", False),  # two ids are compared
])
def test_object_label_present_or_absent(pred_obj, gold_obj, match) -> None:
    assert evidence_compatible(ev("A", 3, "table", pred_obj), ev("A", 3, "table", gold_obj)) is match


def test_paper_page_and_type_must_agree() -> None:
    g = ev("2303.05039v2", 4, "table", "Table 3")
    assert evidence_compatible(ev("arXiv:2303.05039v2", 4, "Table", "Table 3"), g)
    assert not evidence_compatible(ev("2303.05039v2", 5, "table", "Table 3"), g)
    assert not evidence_compatible(ev("2303.05039v2", 4, "figure", "Table 3"), g)
    assert not evidence_compatible(ev("2303.05039v1", 4, "table", "Table 3"), g)
    assert evidence_compatible(ev("A", 1, "text span"), ev("A", 1, "text_span"))  # type aliases
    assert evidence_compatible(ev("A", 1, "algorithm", "Algorithm 1"), ev("A", 1, "equation", "Algorithm 1"))


def test_matching_is_one_to_one() -> None:
    # two gold tables on page 3; three unlabeled predicted tables there: only two can match
    gold = [ev("A", 3, "table", "Table 1"), ev("A", 3, "table", "Table 2")]
    pred = [ev("A", 3, "table"), ev("A", 3, "table"), ev("A", 3, "table")]
    p, pairs = evidence_prf(pred, gold)
    assert len(pairs) == 2
    approx(p, 2 / 3, 1.0, 0.8)  # F1 = 2*(2/3)/(5/3)


def test_matching_is_maximum_not_greedy() -> None:
    # P1 (no label) fits G1 and G2; P2 ("Table 2") fits only G1 (no label). Greedy P1->G1 leaves P2 unmatched;
    # the maximum matching is P1->G2, P2->G1: both matched.
    gold = [ev("A", 3, "table"), ev("A", 3, "table", "Table 1")]
    pred = [ev("A", 3, "table"), ev("A", 3, "table", "Table 2")]
    assert match_evidence(pred, gold) == [(0, 1), (1, 0)]
    approx(evidence_prf(pred, gold)[0], 1, 1, 1)


def test_partial_evidence() -> None:
    gold = [ev("A", 2, "figure", "Figure 1"), ev("B", 7, "text_span")]
    pred = [ev("A", 2, "figure", "Figure 1"), ev("A", 3, "text_span"), ev("B", 8, "text_span"), ev("C", 1, "table")]
    approx(evidence_prf(pred, gold)[0], 1 / 4, 1 / 2, 1 / 3)  # 1 match; F1 = 2*(1/4)(1/2)/(3/4)


# -- answers ------------------------------------------------------------------------------------------------------
def test_free_form_normalized_exact_match() -> None:
    assert free_form_correct("The Median.", "median")  # case, punctuation, articles
    assert free_form_correct("Self-Refine", ["Self Refine", "Madaan et al., 2023"])
    assert not free_form_correct("median value", "median")
    assert not free_form_correct("", "median") and not free_form_correct(None, "x")


def test_free_form_numeric_tolerance() -> None:
    # tolerance = max(half a unit of the gold's last printed digit, 0.1% of |gold|)
    assert numbers_match("47.14", "47.1")  # |diff| 0.04 <= 0.05
    assert not numbers_match("47.2", "47.1")  # 0.1 > 0.05
    assert numbers_match("1039", "1,039") and numbers_match("five", "5")
    assert numbers_match("10,105", "10,112")  # 7 <= 0.1% of 10,112 = 10.1
    assert not numbers_match("10,100", "10,112")  # 12 > 10.1
    assert numbers_match("47.1%", "47.1") and numbers_match("0.471", "47.1%")  # % vs fraction when one says %
    assert not numbers_match("0.471", "47.1")
    assert free_form_correct("27%", ["27%", "27"]) and free_form_correct("−0.021", "-0.021")


def test_multiple_choice_letters() -> None:
    ch = ["Iterative", "Recursive", "Adaptive", "Once"]
    for pred in ("B", "(b)", "B.", "B) Recursive", "Answer: B", "the answer is (B)", "recursive"):
        assert mc_letter(pred, ch) == "B", pred
    assert mc_letter("E", ch) is None  # out of range
    assert mc_letter("A dog", ch) is None  # "A" followed by a word is not a letter
    assert answer_score("multiple_choice", "(B)", "B", ch) == (1.0, True)
    assert answer_score("multiple_choice", "C", "B", ch) == (0.0, False)


def test_table_cell_f1_by_hand() -> None:
    gold = [["Model", "F1"], ["A", "50.1"], ["B", "47.0"]]
    # gold cells (row key, column, value): (a,model,A) (a,f1,50.1) (b,model,B) (b,f1,47.0) -> 4
    pred = [["Model", "F1"], ["B", "46.0"], ["A", "50.10"], ["C", "1"]]
    # pred cells: (b,model,B)+ (b,f1,46.0)- (a,model,A)+ (a,f1,50.10)+ (c,model,C)- (c,f1,1)- -> 3 of 6
    approx(table_prf(pred, gold), 0.5, 0.75, 0.6)  # F1 = 2*.5*.75/1.25
    assert answer_score("table", pred, gold) == (pytest.approx(0.6), False)  # below the 0.8 threshold
    assert answer_score("table", pred, gold, table_threshold=0.6)[1]


def test_table_row_order_header_words_and_std() -> None:
    gold = [["Model", "F1"], ["A", "50.1"], ["B", "47.0"]]
    # rows swapped; header "F1 score" contains "F1" (aligned); "50.1 (0.3)" is 50.1 with a standard deviation
    pred = [["Model", "F1 score"], ["B", "47"], ["A", "50.1 (0.3)"]]
    approx(table_prf(pred, gold), 1, 1, 1)
    assert answer_score("table", "Model | F1\nA | 50.1\nB | 47.0", gold)[1]  # a markdown-ish string is read too
    approx(table_prf([], gold), 0, 0, 0)


# -- records and runs -------------------------------------------------------------------------------------------
GOLD = [
    {"id": "r1", "question": "q1", "answer_format": "free_form", "answer": "median", "gold_papers": ["A"],
     "gold_evidence": [{**ev("A", 1, "text_span"), "quote": "..."}], "multi_paper": False},
    {"id": "r2", "question": "q2", "answer_format": "multiple_choice", "choices": ["x", "y"], "answer": "B",
     "gold_papers": ["A", "C"], "gold_evidence": [ev("A", 2, "table", "Table 1"), ev("C", 4, "figure", "Figure 2")],
     "multi_paper": True},
]


def test_joint_success_needs_all_three() -> None:
    ok = {"id": "r2", "papers": ["C", "A"], "evidence": [ev("C", 4, "figure", "Fig. 2"), ev("A", 2, "table")],
          "answer": "b"}
    assert score_record(GOLD[1], ok).joint_success
    extra = {**ok, "papers": ["A", "C", "D"]}
    assert not score_record(GOLD[1], extra).joint_success  # papers not exactly the gold set
    partial = {**ok, "evidence": ok["evidence"][:1]}
    assert not score_record(GOLD[1], partial).joint_success  # a gold evidence item unmatched
    wrong = {**ok, "answer": "A"}
    assert not score_record(GOLD[1], wrong).joint_success


def test_macro_average_by_hand() -> None:
    preds = [
        # r1: papers {A,B} vs {A}: P .5 R 1 F1 2/3; evidence 1/1; answer right; joint no (extra paper)
        {"id": "r1", "papers": ["A", "B"], "evidence": [ev("A", 1, "text_span")], "answer": "The median"},
        # r2: papers {C} vs {A,C}: P 1 R .5 F1 2/3; evidence 1 of 2: P 1 R .5 F1 2/3; answer right; joint no
        {"id": "r2", "papers": ["C"], "evidence": [ev("C", 4, "figure", "Figure 2")], "answer": "B"},
        {"id": "zz", "papers": [], "evidence": [], "answer": ""},  # not in the dataset: counted, not scored
    ]
    s = score_predictions(GOLD, preds)
    assert s["paper_f1"] == pytest.approx(2 / 3)
    assert s["paper_precision"] == pytest.approx(0.75) and s["paper_recall"] == pytest.approx(0.75)
    assert s["evidence_f1"] == pytest.approx((1 + 2 / 3) / 2)  # 5/6
    assert s["evidence_recall"] == pytest.approx(0.75)
    assert s["answer_accuracy"] == 1.0 and s["joint_success"] == 0.0
    assert s["unknown_prediction_ids"] == ["zz"] and s["missing"] == 0
    assert s["by_format"]["multiple_choice"]["n"] == 1 and s["by_papers"]["multi"]["paper_f1"] == pytest.approx(2 / 3)
    assert s["evidence_recall_by_type"]["figure"] == {"matched": 1, "gold": 1, "recall": 1.0}
    assert s["evidence_recall_by_type"]["table"]["matched"] == 0


def test_missing_prediction_scores_as_empty() -> None:
    s = score_predictions(GOLD, [{"id": "r1", "papers": ["A"], "evidence": [ev("A", 1, "text_span")],
                                  "answer": "median"}])
    assert s["missing"] == 1
    assert s["joint_success"] == 0.5 and s["paper_f1"] == 0.5  # r1 perfect, r2 all zero
    assert aggregate([])["n"] == 0
