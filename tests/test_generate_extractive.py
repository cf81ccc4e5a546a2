"""The no-model answer path: typed spans (extractive helpers) and the evidence-first answer over sample pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from trident_local.generate.answer import answer_question
from trident_local.generate.evidence_answer import STRATEGY
from trident_local.generate.extractive import pick_span
from trident_local.generate.records import ABSTAINED
from trident_local.index import Index
from trident_local.retrieve.base import Hit
from trident_local.text import expected_type

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    ix = Index.create(tmp_path_factory.mktemp("idx") / "ix")
    ix.add([SAMPLES / "helios_annual_report_2023.pdf"], workers=1)
    return ix


def ask(index: Index, q: str, pages: list[int]):
    d = index.store.doc_ids()[0]
    return answer_question(index, q, [Hit(d, p, 1.0, "x") for p in pages])


@pytest.mark.parametrize(
    ("q", "kind"),
    [
        ("How many megawatts?", "count"),
        ("What percentage of output was curtailed?", "percent"),
        ("In what year did it open?", "year"),
        ("How much revenue did they earn?", "money"),
        ("What is the ratio?", "number"),
        ("Who founded it?", "text"),
    ],
)
def test_expected_type(q: str, kind: str) -> None:
    assert expected_type(q) == kind


def test_pick_span_nearest_to_question_terms() -> None:
    unit = "Availability of our fleet was 98.6%, and curtailment fell to 2.3% of potential output."
    assert pick_span(unit, ["curtailment"], "percent") == "2.3%"
    assert pick_span(unit, ["availability"], "percent") == "98.6%"
    assert pick_span("In 2023 we connected 412 megawatts.", ["megawatts"], "count") == "412"  # not the year
    assert pick_span("No numbers here.", ["x"], "count") is None


def test_table_cell(index: Index) -> None:
    a = ask(index, "What was the revenue of the Coastal region in 2023?", [2, 1])
    assert a.mode == STRATEGY and a.text == "95.2" and a.support_page == 2 and "Coastal" in a.support
    assert a.citations[0].page == 2


def test_span_from_sentence_and_citation_order(index: Index) -> None:
    a = ask(index, "How many megawatts of new solar capacity were connected in 2023?", [3, 1])
    assert a.text == "412" and a.support_page == 1
    assert [c.page for c in a.citations] == [1, 3]  # the supporting page is cited first
    a = ask(index, "When did the Red Mesa farm start commercial operation?", [1])
    assert a.text == "14 June 2023"


def test_not_answerable_when_nothing_matches(index: Index) -> None:
    a = ask(index, "Who painted the Mona Lisa?", [1, 2, 3])
    assert a.text == ABSTAINED and not a.answerable and a.evidence  # the best passages are still shown
