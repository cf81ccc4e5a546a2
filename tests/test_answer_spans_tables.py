"""Typed spans, table lookup (borderless tables included), computed answers, abstention calibration."""

from __future__ import annotations

import pymupdf
import pytest

from trident_local.docs.model import EvidenceObject, Page, TextBlock
from trident_local.evaluate.abstention import Candidate, calibrate, scored_at, unanswerable_metrics
from trident_local.evaluate.qa_scoring import ScoredSample
from trident_local.generate.compute import compute, operation
from trident_local.generate.spans import assigned_value, expected_kind, find_spans, nearest_span, scale_words
from trident_local.generate.tables import Table, lookup, page_tables

REVENUE = Table(2, "Table 1", "Table 1: Revenue by region (million dollars)", ["Region", "2022", "2023", "Growth"],
                [["Northland", "61.0", "66.3", "8.7%"], ["Coastal", "74.5", "95.2", "27.8%"],
                 ["Desert", "136.6", "156.9", "14.9%"]])


@pytest.mark.parametrize(("q", "kind"), [
    ("How many megawatts were connected?", "count"),
    ("What percentage of output was curtailed?", "percent"),
    ("In what year did it open?", "year"),
    ("When did the farm start operation?", "date"),
    ("How much revenue did they earn?", "money"),
    ("What is the MRR of fusion?", "number"),
    ("Who is the chief executive?", "name"),
    ("Which figure shows recall?", "ref"),
    ("Why did margins improve?", "text"),
])
def test_expected_kind(q: str, kind: str) -> None:
    assert expected_kind(q) == kind


def test_spans_carry_units_and_skip_years() -> None:
    text = "In 2023 we connected 412 megawatts and reached 1,280 megawatts in operation."
    counts = find_spans(text, "count")
    assert [(s.text, s.value, s.unit) for s in counts] == [("412", 412.0, "megawatts"), ("1,280", 1280.0, "megawatts")]
    unit = "Availability was 98.6%, and curtailment fell to 2.3% of potential output."
    assert nearest_span(unit, ["curtail"], "percent").text == "2.3%"
    assert nearest_span(unit, ["avail"], "percent").text == "98.6%"
    assert nearest_span("No numbers here.", ["x"], "count") is None
    # each value in its own clause: the one whose clause names the question's words, not the first near them
    listed = ("We filled 37% of new, salaried corporate positions with diverse employees; and filled 25% of new, "
              "salaried field positions with female employees.")
    assert nearest_span(listed, ["new", "salari", "field", "posit", "femal", "employe"], "percent").text == "25%"
    # a contrast is one clause (its first part carries the sentence's frame, "a major reason", and would hold
    # more of the question's words): nearness decides, as before
    contrast = "About half (53%) say the federal response is a major reason, while nearly as many (49%) cite testing."
    assert nearest_span(contrast, ["cite", "test", "major", "reason"], "percent").text == "49%"
    assert assigned_value("where r(p) is the rank and k = 60 as in prior work [2].", "k").text == "60"
    assert scale_words("Table 1: Revenue by region (million dollars)") == "million dollars"


def test_table_lookup_names_row_and_column() -> None:
    m = lookup(REVENUE, "What was Helios Grid's revenue in the Coastal region in 2023?")
    assert m is not None and m.value == "95.2" and "Coastal" in m.support and "2023 95.2" in m.support
    assert lookup(REVENUE, "What was the revenue of the Moon region?") is None  # no row named: no answer


def test_the_row_that_names_most_of_the_question_wins_over_a_shorter_one_it_also_names() -> None:
    methods = Table(5, "Table 1", "Table 1: Accuracy on STEM tasks", ["Method", "MMLU Physics", "MMLU Chemistry"],
                    [["PaLM-2L", "66.4%", "70.9%"], ["PaLM-2L + CoT", "65%", "75.3%"],
                     ["PaLM-2L + Step-Back (ours)", "73.2%", "81.8%"], ["GPT-4", "70.3%", "79.9%"]])
    m = lookup(methods, "What score did PaLM-2L + Step-Back achieve in MMLU Physics?")
    assert m is not None and m.value == "73.2%"
    assert lookup(methods, "What score did PaLM-2L achieve in MMLU Chemistry?").value == "70.9%"


def test_a_table_cell_listing_several_values_is_not_taken_as_one() -> None:
    """A cell that runs a column's numbers together ("14 11 5") is not the value a number question asks for:
    the answer comes from elsewhere (here the sentence that states it)."""
    from trident_local.generate.evidence_answer import evidence_answer
    from trident_local.models.profiles import build_model

    text = "Table 2: Board meetings\nDirector | Meetings attended\nR. Shah | 14 11 5 6 2\nR. Shah attended 14 meetings."
    obj = EvidenceObject("p1:table:1", "table", 1, (50, 90, 500, 140), "Table 2", "Table 2: Board meetings",
                         "Director | Meetings attended\nR. Shah | 14 11 5 6 2")
    page = Page(1, text, 600, 800, objects=[obj])
    emb = build_model("embedder", "minilm")
    a = evidence_answer("How many meetings did R. Shah attend?", [page], emb, threshold=0.0)
    assert a.kind != "table-cell" and a.answer == "14"
    from trident_local.generate.evidence_answer import _one_value

    assert _one_value("73.2% (1.9%)") and _one_value("(1,174)") and not _one_value("Lock/unlock")


def test_borderless_table_is_rebuilt_from_word_blocks() -> None:
    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_text((72, 80), "Table 4: Accuracy of the retrievers.", fontsize=10)
    p.insert_textbox(pymupdf.Rect(100, 95, 400, 125), "Model\nAcc.", fontsize=9)
    p.insert_textbox(pymupdf.Rect(100, 127, 400, 190), "BM25\n57.3\nDPR\n60.4", fontsize=9)
    from trident_local.docs.ingest import _blocks

    blocks = _blocks(p)
    cap = next(b for b in blocks if b.text.startswith("Table 4"))
    obj = EvidenceObject("p1:table:1", "table", 1, cap.bbox, "Table 4", "Table 4: Accuracy of the retrievers.", "")
    page = Page(number=1, text="", width=595, height=842, blocks=blocks, objects=[obj])
    (t,) = page_tables(page)
    assert t.header == ["Model", "Acc."] and t.rows == [["BM25", "57.3"], ["DPR", "60.4"]]
    m = lookup(t, "What is the accuracy of DPR?")  # one value column: the question need not name it
    assert m is not None and m.value == "60.4"


def test_computed_answers_show_their_computation() -> None:
    assert operation("How much did Coastal revenue grow from 2022 to 2023?") == "difference"
    assert operation("What is the combined revenue?") == "sum" and operation("What was revenue?") is None
    c = compute([REVENUE], "How much did Coastal revenue grow from 2022 to 2023?")
    assert c is not None and c.text == "20.7" and c.shown == "Coastal 2023 95.2 - Coastal 2022 74.5 = 20.7"
    c = compute([REVENUE], "What is the combined 2023 revenue of Desert and Coastal?")
    assert c is not None and c.text == "252.1" and c.page == 2
    assert compute([REVENUE], "What is the difference between Mars and Venus?") is None


def test_unanswerable_metrics_and_threshold_calibration() -> None:
    s = [ScoredSample("Not answerable", "Not answerable", 1.0), ScoredSample("5", "Not answerable", 0.0),
         ScoredSample("Not answerable", "7", 0.0)]
    assert unanswerable_metrics(s) == {"precision": 0.5, "recall": 0.5, "predicted": 2, "gold": 2}
    cands = [Candidate("12", "Int", "12", 0.9), Candidate("Not answerable", "None", "40", 0.3),
             Candidate("3", "Int", "8", 0.2)]
    cal = calibrate(cands)
    assert 0.3 < cal["threshold"] <= 0.9 and cal["best"]["accuracy"] == pytest.approx(2 / 3)
    assert [x.pred for x in scored_at(cands, cal["threshold"])] == ["12", "Not answerable", "Not answerable"]
    with pytest.raises(ValueError):
        calibrate([])


def test_a_cited_marker_resolves_to_its_reference_entry_of_the_same_document() -> None:
    """"Which reference is cited for X?": the sentence about X cites "[2]"; the answer is the entry it points to."""
    from trident_local.generate.evidence_answer import evidence_answer
    from trident_local.models.profiles import build_model

    body = Page(1, "Reciprocal rank fusion merges the rankings, as in prior work [2].", 600, 800)
    entries = ["[1] A. Smith. Sparse retrieval. 2001.", "[2] G. Cormack. Reciprocal rank fusion. SIGIR 2009."]
    refs = Page(3, "\n".join(entries), 600, 800,
                blocks=[TextBlock(t, (50, 100 + 20 * i, 500, 115 + 20 * i), 9) for i, t in enumerate(entries)])
    other = Page(5, "[2] B. Jones. Unrelated work. 2015.", 600, 800)
    q = "Which reference is cited for reciprocal rank fusion?"
    emb = build_model("embedder", "minilm")
    a = evidence_answer(q, [body, refs], emb, threshold=0.0)
    assert a.answer.startswith("[2] G. Cormack") and a.page == 3
    # the only "[2]" entry is another document's: the marker stays the answer, on its own page
    a = evidence_answer(q, [body, other], emb, threshold=0.0, docs=["paper", "another"])
    assert (a.answer, a.page) == ("[2]", 1)
