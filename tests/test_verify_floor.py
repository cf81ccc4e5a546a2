"""A floor under model verdicts (trident_local/verify/floor.py): a judge that calls everything
"supported" (what SmolLM2-135M did) cannot make an answer with no content, or with values printed on
none of its cited pages, "supported"; the no-model support score is recorded beside each model verdict."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from chat_doubles import backend_profile

from trident_local.config import Config
from trident_local.generate.records import Answer, Citation
from trident_local.generate.self_check import FLAGGED, SUPPORTED, self_check
from trident_local.index import Index
from trident_local.models.protocols import ChatResult
from trident_local.verify.floor import floor, no_content, values_missing
from trident_local.verify.pipeline import Verifier
from trident_local.verify.types import Claim

PAGES = [
    "Helios Energy annual report 2023. Revenue of the Coastal region reached 95.2 million dollars in 2023, "
    "up from 74.5 million dollars in 2022.",
    "The Inland region employed 1,250 people at the end of 2023 across four plants.",
]


@pytest.mark.parametrize("answer", ["", "   ", "[', ']", "['', '']", "[]", "...", "—", "4 4 4", "[42, 42, 42]",
                                    "the the the the"])
def test_content_free_answers(answer: str) -> None:
    assert no_content(answer)
    assert floor(answer, PAGES)  # whatever the pages say


@pytest.mark.parametrize("answer", ["42", "Yes", "4 and 4.5", "95.2 million dollars", "Coastal, Coastal and Inland",
                                    "no no"])
def test_answers_with_content(answer: str) -> None:
    assert no_content(answer) is None


def test_values_must_be_printed_on_a_cited_page() -> None:
    assert values_missing("95.2 million dollars", PAGES[:1]) == []
    assert values_missing("95,200,000 dollars", PAGES[:1]) == []  # the same value at another scale
    assert values_missing("It rose from 74.5 to 95.2 (28%)", PAGES[:1]) == ["28"]  # computed: printed nowhere
    assert values_missing("1,250 people", PAGES[:1]) == ["1250"]  # printed, but not on the cited page
    assert values_missing("1,250 people", PAGES) == []
    assert values_missing("The Coastal region", PAGES[:1]) == []  # no value stated: nothing to miss
    assert floor("1,250 people", PAGES[:1]) == "stated values on none of the cited pages: 1250"


class AlwaysSupported:
    """A judge model that calls every claim supported, as SmolLM2-135M did."""

    name = "always-supported"
    supports_images = False
    supports_json_schema = True
    instances: ClassVar[list[AlwaysSupported]] = []

    def __init__(self, **_: object) -> None:
        self.requests = 0
        AlwaysSupported.instances.append(self)

    def chat(self, requests):
        self.requests += len(requests)
        return [ChatResult('{"verdict": "supported", "rationale": "the page says so"}') for _ in requests]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    import pymupdf

    tmp = tmp_path_factory.mktemp("floor")
    doc = pymupdf.open()
    for text in PAGES:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 520, 400), text, fontsize=11)
    doc.save(tmp / "helios.pdf")
    idx = Index.create(tmp / "idx", Config(pools=["bm25"], ocr="none"))
    assert not idx.add([tmp / "helios.pdf"], workers=1).failed
    return idx


@pytest.fixture
def judge_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return backend_profile(tmp_path, monkeypatch, "always-supported", AlwaysSupported)


def test_a_model_supported_stands_only_above_the_floor(index: Index, judge_profile: str) -> None:
    v = Verifier.from_index(index, text=judge_profile, window=0)
    assert v.support_scorer is not None  # a model judges: the no-model scorer runs beside it
    doc = index.resolve("helios.pdf")
    q = "What was the revenue of the Coastal region in 2023?"
    claims = [Claim(f"{q} - {a}", [1], f"c{i}", 0, "given", answer=a)
              for i, a in enumerate(["95.2 million dollars", "[', ']", "2023 2023 2023", "103.4 million dollars"])]
    results = [r for (r,) in v.verify_claims([(doc, c) for c in claims])]
    assert [r.verdict for r in results] == ["supported", "unsupported", "unsupported", "unsupported"]
    assert [("floor" in r.flags) for r in results] == [False, True, True, True]
    assert "no letter or digit" in results[1].floor and "repeated" in results[2].floor
    assert results[3].floor == "stated values on none of the cited pages: 103.4"
    assert all(j.verdict == "supported" for r in results for j in r.judgements)  # the model's own verdict kept
    scores = [r.judgements[0].support_score for r in results]
    assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores), scores  # beside every model verdict
    assert scores[0] > scores[1]  # the no-model scorer agrees where the floor holds


def test_the_no_model_scorer_alone_has_no_scorer_beside_it(index: Index) -> None:
    v = Verifier.from_index(index, text="none", window=0)
    assert v.support_scorer is None
    doc = index.resolve("helios.pdf")
    ((r,),) = v.verify_claims([(doc, Claim("Revenue was 95.2 million dollars in 2023", [1]))])
    assert r.judgements[0].support_score is None and r.judgements[0].score is not None


def test_a_content_free_answer_is_not_supported(index: Index, judge_profile: str) -> None:
    """The self-check every answer goes through: a judge calling everything supported cannot pass a reply
    such as "[', ']"; it is flagged before any judge is asked."""
    index.models.use_profile("chat", judge_profile)
    index._self_check_verifier = None
    doc = index.resolve("helios.pdf")
    q = "What was the revenue of the Coastal region in 2023?"

    def answer(text: str) -> Answer:
        return Answer(q, text, "plain:always-supported", [Citation(doc, "helios.pdf", 1)])

    for text in ("[', ']", "[]", " 2023 2023 2023 "):  # ("" and "..." read as "Not answerable")
        check = self_check(index, answer(text))
        assert check.status == FLAGGED, (text, check)
        (c,) = check.claims
        assert c.verdict != "supported" and "no-content" in c.flags and c.why
        assert check.model_calls == 0
    good = self_check(index, answer("95.2 million dollars"))
    assert good.status == SUPPORTED and good.model_calls == 1
    assert good.claims[0].support_score is not None  # recorded beside the model's verdict
    wrong = self_check(index, answer("103.4 million dollars"))
    assert wrong.status == FLAGGED and "floor" in wrong.claims[0].flags
    assert "103.4" in wrong.claims[0].why
