"""The text channel abstains ("unknown" -> keep, flag unverified) where text cannot decide; else it decides."""

from __future__ import annotations

from trident_local.docs.model import EvidenceObject, Page
from trident_local.verify.repair import decide
from trident_local.verify.types import FLAG, UNKNOWN
from trident_local.verify.undecidable import cannot_decide, computed_from, page_is_visual

ON_TOPIC = {"idf_coverage": 0.9}
OFF_TOPIC = {"idf_coverage": 0.2}


def _page(figure: bool) -> Page:
    objs = [EvidenceObject("p1:figure:1", "figure", 1, (0, 0, 100, 100), "Figure 1")] if figure else []
    return Page(number=1, text="x", width=595, height=842, objects=objs)


def test_computed_value_is_recognised() -> None:
    assert computed_from(20.7, [74.5, 95.2, 61.0]) == "95.2 - 74.5"
    assert computed_from(50.0, [10.0, 20.0]) == "10 % of 20"
    assert computed_from(999.0, [1.0, 2.0]) is None


def test_cannot_decide_only_when_on_topic_and_value_unseen() -> None:
    page_text = "Coastal revenue was 74.5 in 2022 and 95.2 in 2023."
    claim_computed = "How much did Coastal revenue grow? - 20.7"
    assert "computable" in cannot_decide(claim_computed, page_text, ON_TOPIC, _page(False))
    assert cannot_decide(claim_computed, page_text, OFF_TOPIC, _page(False)) is None  # another page's topic
    claim_chart = "What was installed capacity in 2021? - 790"
    assert "figure" in cannot_decide(claim_chart, "Installed capacity by year.", ON_TOPIC, _page(True))
    assert cannot_decide(claim_chart, "Installed capacity by year.", ON_TOPIC, _page(False)) is None
    printed = "What was Coastal revenue in 2023? - 95.2"
    assert cannot_decide(printed, page_text, ON_TOPIC, _page(True)) is None  # the value is there: decidable
    assert page_is_visual(_page(True)) and not page_is_visual(None)


def test_unknown_is_kept_and_flagged_never_removed() -> None:
    assert decide(UNKNOWN, 3) == (FLAG, None, ["unverified"])
