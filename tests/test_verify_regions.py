"""The region check of `trident verify`: a claim's values located in the cited page's cells (or the cells
they are computed from), the keep / fix-region decision it makes before the page policy, and how it
shows in the report, the corrected JSON answer and the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trident_local.config import Config
from trident_local.index import Index
from trident_local.regions import page_layout
from trident_local.verify.judge_common import JudgeItem, StorePages
from trident_local.verify.pipeline import Verifier
from trident_local.verify.regions import check_claim, claim_values
from trident_local.verify.repair import final_pages, region_decision
from trident_local.verify.types import FIX_REGION, KEEP, Judgement

HELIOS = Path(__file__).resolve().parents[1] / "samples" / "helios_annual_report_2023.pdf"
STATED = "Coastal revenue in 2023 was 95.2 million dollars."


@pytest.fixture(scope="module")
def helios(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("verify_regions")
    pdf = shutil.copy(HELIOS, root / HELIOS.name)
    idx = Index.create(root / "idx", Config(pools=["bm25"], ocr="none"))
    assert not idx.add([Path(pdf)], workers=1).failed
    return idx


class Nay:
    """A judge that finds nothing anywhere: what is kept is kept by the region check alone."""

    channel, name, calls = "text", "nay", 0

    def judge(self, items: list[JudgeItem]) -> list[Judgement]:
        return [Judgement("unsupported", "", "text", it.page, self.name) for it in items]


def test_years_are_context_unless_the_claim_states_nothing_else() -> None:
    assert claim_values(STATED) == ["95.2"]
    assert claim_values("The farm opened in 2023.") == ["2023"]
    assert claim_values("Maria Okafor leads the company.") == []


def test_a_stated_value_is_its_cell_with_both_headers() -> None:
    check = check_claim(page_layout(HELIOS, 2), STATED)
    assert check.verdict == "supported" and check.how == "stated"
    assert [(r.kind, r.text) for r in check.regions] == [("cell", "95.2"), ("row-header", "Coastal"),
                                                          ("column-header", "2023")]


def test_a_computed_value_is_supported_by_its_operands() -> None:
    check = check_claim(page_layout(HELIOS, 2), "Coastal revenue grew by 20.7 million dollars from 2022 to 2023.")
    assert check.verdict == "supported" and check.how == "computed: 20.7 = 95.2 - 74.5"
    assert [r.text for r in check.regions] == ["95.2", "74.5"]


@pytest.mark.parametrize("claim", [
    "Coastal revenue in 2023 was 142.8 million dollars.",  # a changed value: not on the page
    "The Red Mesa battery stores 27.8 megawatt-hours.",  # on the page, in a row about something else
])
def test_a_value_the_page_does_not_state_for_the_claim_is_unsupported(claim: str) -> None:
    check = check_claim(page_layout(HELIOS, 2), claim)
    assert check.verdict == "unsupported" and check.regions == []


def test_a_claim_without_numbers_is_left_to_the_judges() -> None:
    assert check_claim(page_layout(HELIOS, 1), "Maria Okafor leads the company.").verdict == "unknown"


def test_the_region_decision_comes_before_the_page_policy() -> None:
    assert region_decision("unsupported", "supported", None) == (KEEP, ["region-supported"])
    assert region_decision("supported", "supported", True) == (KEEP, [])
    assert region_decision("supported", "supported", False) == (FIX_REGION, [])
    assert region_decision("unsupported", "unsupported", None) is None
    assert region_decision("inconsistent", "supported", None) is None  # flagged for a reader, as before
    assert final_pages([2], {2: (FIX_REGION, None)}) == [2]  # the citation stays on its page


def test_verify_keeps_a_located_value_and_moves_a_wrong_region(helios: Index) -> None:
    v = Verifier(StorePages(helios.store), Nay(), window=1, store=helios.store)
    desert_row = [60.0, 203.0, 300.0, 216.0]  # the Desert row of Table 1, not the Coastal cell
    answer = {"claims": [
        {"text": STATED, "pages": [2]},
        {"text": STATED, "pages": [2], "regions": [{"page": 2, "bbox": desert_row}]},
        {"text": "Coastal revenue in 2023 was 95.2 million dollars.", "pages": [1]},  # wrong page, next to it
        {"text": "Coastal revenue in 2023 was 142.8 million dollars.", "pages": [2]},
    ]}
    rep = v.verify(answer, HELIOS.name)
    got = [(r.action, r.new_page, r.flags) for r in rep.results]
    assert got == [(KEEP, None, ["region-supported"]), (FIX_REGION, None, ["region-supported"]),
                   ("fix-page", 2, []), ("remove", None, [])]
    assert rep.results[1].regions[0]["text"] == "95.2" and rep.results[1].region_check == "stated"
    assert rep.results[2].regions[0]["page"] == 2  # the fixed page's region
    claims = rep.corrected_answer["claims"]
    assert [c["pages"] for c in claims] == [[2], [2], [2]]
    assert all(c["regions"][0]["text"] == "95.2" for c in claims)
    off = Verifier(StorePages(helios.store), Nay(), window=1, store=helios.store, regions=False)
    assert [r.action for r in off.verify(answer, HELIOS.name).results] == ["remove"] * 4


def test_malformed_regions_are_ignored_with_a_warning(helios: Index) -> None:
    v = Verifier(StorePages(helios.store), Nay(), window=0, store=helios.store)
    rep = v.verify({"claims": [{"text": STATED, "pages": [2], "regions": [{"page": 2, "bbox": "x"}, 5]}]},
                   HELIOS.name)
    assert rep.results[0].action == KEEP and any("2 region(s)" in w for w in rep.warnings)


def test_the_cli_prints_the_region_and_can_turn_it_off(helios: Index, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from trident_local.cli import app

    runner = CliRunner()
    args = ["verify", "-i", str(helios.store.root), "-d", HELIOS.name, "--text-judge", "none", "--json", "-",
            f"{STATED} [p. 2]."]
    data = json.loads(runner.invoke(app, args).stdout)
    (r,) = data["results"]
    assert r["action"] == "keep" and r["regions"][0]["kind"] == "cell" and r["region_check"] == "stated"
    data = json.loads(runner.invoke(app, [*args, "--no-regions"]).stdout)
    assert data["results"][0]["regions"] == [] and data["results"][0]["region_check"] == ""


def test_locators_and_near_miss_computations_are_not_evidence() -> None:
    claim = "What was the Coastal region's revenue in 2023 in Table 1? - 95.2"
    assert claim_values(claim) == ["95.2"]  # "Table 1" names a place, not a value
    # page 3 prints 98.6 and a section number 4: 98.6 - 4 = 94.6 is within 1% of 95.2, not 95.2
    assert check_claim(page_layout(HELIOS, 3), claim).verdict == "unsupported"
