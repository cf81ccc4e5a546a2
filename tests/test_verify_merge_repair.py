"""AtomCite merge truth table, repair policy (window at document edges), corrected-answer composition."""

from __future__ import annotations

import pytest

from trident_local.verify.compose import compose
from trident_local.verify.merge import merge
from trident_local.verify.parse import parse_answer
from trident_local.verify.repair import decide, final_pages, needs_window, window_pages
from trident_local.verify.types import (
    IMAGE,
    TEXT,
    Claim,
    ClaimResult,
    Judgement,
    VerificationReport,
)

S, P, U, X = "supported", "partial", "unsupported", "unknown"


def j(verdict: str | None, channel: str) -> Judgement | None:
    return None if verdict is None else Judgement(verdict, "", channel)


# (text, image) -> merged verdict; None = channel absent, X = judge failed ("unknown").
TRUTH_TABLE = {
    (S, S): S, (S, P): P, (S, U): "inconsistent", (S, None): S, (S, X): S,
    (P, S): S, (P, P): P, (P, U): U, (P, None): P, (P, X): P,
    (U, S): "inconsistent", (U, P): P, (U, U): U, (U, None): U, (U, X): U,
    (None, S): S, (None, P): P, (None, U): U, (None, None): X, (None, X): X,
    (X, S): S, (X, P): P, (X, U): U, (X, None): X, (X, X): X,
}


@pytest.mark.parametrize(("pair", "expected"), list(TRUTH_TABLE.items()))
def test_merge_truth_table(pair: tuple[str | None, str | None], expected: str) -> None:
    verdict, flags = merge(j(pair[0], TEXT), j(pair[1], IMAGE))
    assert verdict == expected
    if expected == "inconsistent":
        assert "hard-conflict" in flags
    if pair[0] in (S, P, U) and pair[1] in (S, P, U) and pair[0] != pair[1] and expected != "inconsistent":
        assert "soft-conflict-image-wins" in flags
    if X in pair:
        assert any(f.endswith("-judge-error") for f in flags)


def test_window_pages_respect_document_edges() -> None:
    assert window_pages(5, 10, 2) == [4, 6, 3, 7]
    assert window_pages(1, 10, 2) == [2, 3]  # first page: nothing before it
    assert window_pages(10, 10, 2) == [9, 8]  # last page
    assert window_pages(2, 3, 2) == [1, 3]
    assert window_pages(1, 1, 2) == []  # a one-page document has no window
    assert window_pages(5, 10, 0) == []
    assert window_pages(12, 10, 2) == [10]  # a cited page past the end: only real pages
    assert window_pages(5, 10, 5) == [4, 6, 3, 7, 2, 8, 1, 9, 10]
    with pytest.raises(ValueError):
        window_pages(5, 10, -1)


@pytest.mark.parametrize(
    ("verdict", "window", "scores", "expected"),
    [
        (S, {}, None, ("keep", None, [])),
        (S, {4: S}, None, ("keep", None, [])),  # window never overrides a supported citation
        ("inconsistent", {}, None, ("flag", None, ["inconsistent"])),
        (X, {}, None, ("flag", None, ["unverified"])),
        (U, {4: U, 6: S}, None, ("fix-page", 6, [])),
        (U, {4: S, 6: S}, None, ("fix-page", 4, [])),  # nearest, then lower page
        (U, {3: S, 7: S}, None, ("fix-page", 3, [])),
        (U, {4: S, 6: S}, {4: 0.6, 6: 0.9}, ("fix-page", 6, [])),  # the best score first
        (U, {4: P, 6: "inconsistent", 3: X}, None, ("remove", None, [])),  # only "supported" proposes
        (U, {}, None, ("remove", None, [])),
        (P, {6: S}, None, ("fix-page", 6, [])),
        (P, {6: U}, None, ("flag", None, ["partial"])),
    ],
)
def test_repair_policy(verdict, window, scores, expected) -> None:
    assert decide(verdict, 5, window, scores) == expected


def test_repair_rejects_unknown_verdicts_and_window_need() -> None:
    with pytest.raises(ValueError):
        decide("maybe", 5, {})
    assert [needs_window(v) for v in (S, P, U, "inconsistent", X)] == [False, True, True, False, False]


def test_final_pages() -> None:
    assert final_pages([3, 5, 7], {3: ("keep", None), 5: ("fix-page", 6), 7: ("remove", None)}) == [3, 6]
    assert final_pages([3, 5], {3: ("fix-page", 5), 5: ("flag", None)}) == [5]
    assert final_pages([3], {3: ("remove", None)}) == []


def result(claim: Claim, page: int, action: str, new: int | None = None) -> ClaimResult:
    verdict = {"keep": S, "fix-page": U, "remove": U, "flag": "inconsistent"}[action]
    return ClaimResult(claim=claim, cited_page=page, verdict=verdict, action=action, new_page=new)


def test_compose_text_answers() -> None:
    text = "Revenue grew (page 14). Costs fell [p. 3]. Unrelated words. Margins rose [pp. 4, 8].\n\n- Item [9]"
    parsed = parse_answer(text)
    c1, c2, c3, c4 = parsed.claims
    unchanged = [result(c1, 14, "keep"), result(c2, 3, "flag"), result(c3, 4, "keep"), result(c3, 8, "keep"),
                 result(c4, 9, "keep")]
    assert compose(parsed, unchanged) == text  # every citation stands: the answer comes back as written
    changed = [result(c1, 14, "fix-page", 15), result(c2, 3, "remove"), result(c3, 4, "keep"),
               result(c3, 8, "remove"), result(c4, 9, "remove")]
    assert compose(parsed, changed) == "Revenue grew [p. 15]. Unrelated words. Margins rose [p. 4]."


def test_compose_split_sentence_and_json() -> None:
    parsed = parse_answer("A rose 5% [p. 3] and B fell 2% [p. 4].")
    a, b = parsed.claims
    assert compose(parsed, [result(a, 3, "keep"), result(b, 4, "remove")]) == "A rose 5% [p. 3]."
    obj = {"answer": "x", "claims": [{"text": "A.", "pages": [1, 2]}, {"text": "B.", "pages": [5]}]}
    parsed = parse_answer(obj)
    a, b = parsed.claims
    out = compose(parsed, [result(a, 1, "keep"), result(a, 2, "fix-page", 3), result(b, 5, "remove")])
    assert out == {"answer": "x", "claims": [{"text": "A.", "pages": [1, 3]}],
                   "removed_claims": [{"text": "B.", "pages": [5]}]}
    assert obj["claims"][0]["pages"] == [1, 2]  # the input is not modified


def test_report_round_trips_through_json() -> None:
    import json

    c = Claim("A rose.", [3], "c1")
    r = ClaimResult(c, 3, U, "fix-page", 4, ["x"], [Judgement(U, "no", TEXT, 3, "j", 0.1)], {4: S, 2: U})
    rep = VerificationReport("d", "f.pdf", "text", [r], "A rose [p. 4].", 2, {"text": "j"}, ["u"], ["w"], 3)
    back = VerificationReport.from_dict(json.loads(json.dumps(rep.to_dict())))
    assert back == rep
    assert rep.counts() == {"fix-page": 1}
