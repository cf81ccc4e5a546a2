"""MMLongBench-Doc generalized accuracy, against values worked out by hand."""

from __future__ import annotations

import pytest

from trident_local.evaluate.qa_scoring import (
    ScoredSample,
    accuracy,
    anls,
    breakdown,
    clean_string,
    f1,
    float_equal,
    levenshtein,
    needs_exact_match,
    score_answer,
)


def test_levenshtein_and_anls_threshold() -> None:
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "abc") == 3
    assert anls("Berlin", "Bern") == pytest.approx(1 - 2 / 6)  # 0.667 survives the threshold
    assert anls("abcd", "abxy") == 0.0  # exactly 0.5 is set to 0 (<= threshold)
    assert anls("abcde", "abcxy") == pytest.approx(0.6)
    assert anls("abcde", "abxyz") == 0.0  # 0.4
    assert anls("", "") == 1.0


def test_clean_string() -> None:
    assert clean_string("  $1,200 (approx.) ") == "1,200"
    assert clean_string('"Europe"') == "europe"
    assert clean_string("18.29%") == "18.29"
    assert clean_string("300 million") == "300 million"  # the official unit stripping is a no-op; kept


@pytest.mark.parametrize(
    ("gold", "pred", "expected"),
    [
        ("8", "8", 1.0),
        ("8", "8.0", 1.0),
        ("8", "8.7", 1.0),  # int(float("8.7")) == 8, as the official code
        ("8", "8 pages", 0.0),
        ("10", "9", 0.0),
        ("12", "Not answerable", 0.0),
    ],
)
def test_int(gold: str, pred: str, expected: float) -> None:
    assert score_answer(gold, pred, "Int") == expected


@pytest.mark.parametrize(
    ("gold", "pred", "expected"),
    [
        ("18.29%", "18.3", 1.0),  # |18.29 - 18.3| = 0.01 <= 1% of 18.3
        ("0.25", "25", 1.0),  # fraction vs percent: gold x 100
        ("21%", "0.21", 1.0),  # percent vs fraction: gold / 100
        ("3.5", "3.6", 0.0),  # 2.8% off
        ("$1.2", "1.21", 1.0),  # 0.01 <= 0.0121
        ("2.5", "two and a half", 0.0),
    ],
)
def test_float_percent_fraction_factor_100(gold: str, pred: str, expected: float) -> None:
    assert score_answer(gold, pred, "Float") == expected


def test_float_equal_rounding_branch() -> None:
    assert float_equal(0.004, 0.0041)  # isclose fails (2.4%), rounding to 3 decimals makes both 0.004
    assert not float_equal(100.0, 102.0)


def test_str_anls_and_exact_match_strings() -> None:
    assert score_answer("Europe", "europe", "Str") == 1.0
    assert score_answer("Less well-off", "less well off", "Str") == pytest.approx(1 - 1 / 13)
    assert score_answer("Berlin", "Bern", "Str") == pytest.approx(2 / 3)
    assert score_answer("Analysis", "Reporting", "Str") == 0.0
    # URLs, dates, e-mails, phone numbers need equality
    assert needs_exact_match("https://www.example.com")
    assert score_answer("https://www.example.com", "https://www.example.com/", "Str") == 0.0
    assert score_answer("https://www.example.com", "https://www.example.com", "Str") == 1.0
    assert score_answer("2023-05-01", "2023-05-02", "Str") == 0.0
    assert score_answer("2023-05", "2023-05", "Str") == 1.0
    assert score_answer("info@example.org", "info@example.com", "Str") == 0.0
    assert score_answer("555-1234", "555-1235", "Str") == 0.0


def test_list_set_match_and_min_anls() -> None:
    assert (
        score_answer("['White', '10%']", "['10%', 'white']", "List") == 1.0
    )  # numbers: the whole list equal
    assert score_answer("['White', '10%']", "['11%', 'white']", "List") == 0.0
    assert score_answer("['Circle', 'Rectangle']", ["rectangl", "circle"], "List") == pytest.approx(1 - 1 / 9)
    assert score_answer("['Circle', 'Rectangle']", "['circle']", "List") == 0.0  # lengths differ
    assert score_answer("['Circle', 'Rectangle']", "Circle and Rectangle", "List") == 0.0
    assert score_answer("['Circle', 'Triangle']", "['circle', 'square']", "List") == 0.0  # min over pairs


def test_none_format_is_not_answerable() -> None:
    assert score_answer("Not answerable", "Not answerable", "None") == 1.0
    assert score_answer("Not answerable", "not answerable.", "None") == pytest.approx(1 - 1 / 15)
    assert score_answer("Not answerable", "12", "None") == 0.0


def test_accuracy_f1_and_breakdown() -> None:
    s = [
        ScoredSample("A", "A", 1.0),
        ScoredSample("B", "X", 0.0),
        ScoredSample("Not answerable", "Not answerable", 1.0),
        ScoredSample("Not answerable", "Y", 0.0),
    ]
    assert accuracy(s) == 0.5
    # recall = 1 / 2 answerable; precision = 1 / 3 predictions that are not "Not answerable"
    assert f1(s) == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert f1([ScoredSample("Not answerable", "Not answerable", 1.0)]) == 0.0
    b = breakdown(s, [["Chart", "Table"], ["Table"], ["Chart"], []])
    assert b == {"Chart": {"n": 2, "accuracy": 1.0}, "Table": {"n": 2, "accuracy": 0.5}}


class _Scripted:
    name = "scripted"
    supports_images = False
    supports_json_schema = True

    def __init__(self, text: str | None):
        self.text = text

    def chat(self, requests):
        from trident_local.models.protocols import ChatResult

        return [
            ChatResult("", error="down") if self.text is None else ChatResult(self.text) for _ in requests
        ]


def test_local_answer_extraction() -> None:
    from trident_local.evaluate.qa_extract import extract, parse_extraction

    assert extract(None, "q", "95.2").answer == "95.2"  # CPU default: as is
    got = extract(
        _Scripted('{"answer": 12.0, "format": "Integer"}'), "How many?", "There are twelve, i.e. 12."
    )
    assert (got.answer, got.format, got.source) == ("12", "Integer", "model")
    got = extract(_Scripted('{"answer": ["a", "b"], "format": "List"}'), "q", "a and b")
    assert got.answer == "['a', 'b']" and score_answer("['b', 'a']", got.answer, "List") == 1.0
    assert extract(_Scripted('{"answer": "x", "format": "None"}'), "q", "no idea").answer == "Not answerable"
    assert extract(_Scripted("garbage"), "q", "raw reply").source == "as-is (extractor output unusable)"
    assert extract(_Scripted(None), "q", "raw reply").answer == "raw reply"
    with pytest.raises(Exception):  # noqa: B017 - ModelOutputError
        parse_extraction('{"answer": ""}')
