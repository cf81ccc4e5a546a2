"""AtomCite parsing: citation markers in many styles, sentences, JSON answers, atomic decomposition."""

from __future__ import annotations

import pytest

from trident_local.models.protocols import ChatResult
from trident_local.verify.parse import (
    decompose,
    find_markers,
    format_marker,
    parse_answer,
    parse_decomposition,
    parse_marker,
)


@pytest.mark.parametrize(
    ("text", "pages"),
    [
        ("Revenue grew [p. 12].", [12]),
        ("Revenue grew [p.12].", [12]),
        ("Revenue grew [p12].", [12]),
        ("Revenue grew [P. 12].", [12]),
        ("Revenue grew [page 12].", [12]),
        ("Revenue grew [Page 12].", [12]),
        ("Revenue grew [pages 3, 5].", [3, 5]),
        ("Revenue grew [pp. 3-5].", [3, 4, 5]),
        ("Revenue grew [pp. 3–5].", [3, 4, 5]),
        ("Revenue grew [pp. 3 to 5].", [3, 4, 5]),
        ("Revenue grew [pp. 3, 7].", [3, 7]),
        ("Revenue grew [p. 3; p. 5].", [3, 5]),
        ("Revenue grew [p. 3 and p. 5].", [3, 5]),
        ("Revenue grew [12].", [12]),
        ("Revenue grew [12, 14].", [12, 14]),
        ("Revenue grew [3-4].", [3, 4]),
        ("Revenue grew (page 12).", [12]),
        ("Revenue grew (p. 12).", [12]),
        ("Revenue grew (pp. 3 and 5).", [3, 5]),
        ("Revenue grew (pages 3 & 5).", [3, 5]),
        ("Revenue grew (see page 7).", [7]),
        ("Revenue grew (Source: page 7).", [7]),
        ("Revenue grew [see p. 4].", [4]),
        ("Revenue grew [report.pdf, p. 4].", [4]),
        ("Revenue grew 【12】.", [12]),
        ("Revenue grew {p. 12}.", [12]),
        ("Revenue grew [pg. 9].", [9]),
        ("Revenue grew [pp. 5-5].", [5]),
        ("Revenue grew [p. 12] [p. 14].", [12, 14]),
        ("Revenue grew [12][14].", [12, 14]),
    ],
)
def test_marker_styles(text: str, pages: list[int]) -> None:
    parsed = parse_answer(text)
    assert len(parsed.claims) == 1
    assert parsed.claims[0].pages == pages
    assert parsed.claims[0].text == "Revenue grew."


@pytest.mark.parametrize(
    "text",
    [
        "It rose in (2019) and (12) times.",  # parentheses need a page word
        "See [citation needed] here.",
        "Values [a, b] and [x].",
        "Page zero [p. 0] is not a page.",
        "An empty marker [p.] is nothing.",
        "No markers at all.",
    ],
)
def test_non_citations_are_not_markers(text: str) -> None:
    assert parse_answer(text).claims == []


def test_long_range_keeps_its_ends_and_reversed_range_keeps_both() -> None:
    assert parse_marker("pp. 3-40") == [3, 40]
    assert parse_marker("pp. 9-4") == [9, 4]
    assert parse_marker("p. 3, 3") == [3]
    assert format_marker([4]) == "[p. 4]" and format_marker([4, 6]) == "[pp. 4, 6]" and format_marker([]) == ""
    assert [m.pages for m in find_markers("a [p. 1] b (page 2) c [3]")] == [[1], [2], [3]]


def test_sentences_and_marker_ownership() -> None:
    text = (
        "Revenue grew 12% in 2023 [p. 14]. Costs fell. [p. 3] The CEO, Dr. J. Smith, spoke (page 5). "
        "An uncited sentence. See e.g. Fig. 3 for details [pp. 5-6]."
    )
    parsed = parse_answer(text)
    got = [(c.text, c.pages) for c in parsed.claims]
    assert got == [
        ("Revenue grew 12% in 2023.", [14]),
        ("Costs fell.", [3]),  # a marker right after a sentence belongs to it
        ("The CEO, Dr. J. Smith, spoke.", [5]),  # no split after abbreviations or initials
        ("See e.g. Fig. 3 for details.", [5, 6]),
    ]
    assert parsed.uncited == ["An uncited sentence."]
    assert [c.claim_id for c in parsed.claims] == ["c1", "c2", "c3", "c4"]
    assert parsed.pairs()[-1] == (parsed.claims[-1], 6)


def test_several_markers_inside_one_sentence_split_it() -> None:
    parsed = parse_answer("A rose 5% [p. 3] and B fell 2% [p. 4], according to the report.")
    assert [(c.text, c.pages) for c in parsed.claims] == [
        ("A rose 5%", [3]),
        ("and B fell 2%, according to the report.", [4]),
    ]
    assert {c.sentence for c in parsed.claims} == {0}


def test_lists_paragraphs_and_leading_marker() -> None:
    text = "Summary first. [p. 2]\n\n- Item one [3]\n- Item two (pp. 4 and 6)\n1. Numbered item [p. 7]"
    parsed = parse_answer(text)
    assert [(c.text, c.pages) for c in parsed.claims] == [
        ("Summary first.", [2]),
        ("Item one", [3]),
        ("Item two", [4, 6]),
        ("Numbered item", [7]),
    ]
    assert [s.prefix for s in parsed.sentences] == ["", "- ", "- ", "1. "]
    assert parse_answer("[p. 2] Leading marker. Next.").claims[0].pages == [2]


def test_json_answers() -> None:
    obj = {
        "answer": "Revenue grew and costs fell.",
        "claims": [
            {"text": "Revenue grew 12%.", "pages": [12]},
            {"text": "Costs fell.", "page": 3},
            {"text": "Margins rose.", "pages": ["p. 4", "5"]},
            {"text": "No page here."},
            {"pages": [1]},
            "A bare string claim",
        ],
    }
    parsed = parse_answer(obj)
    assert parsed.format == "json"
    assert [(c.text, c.pages) for c in parsed.claims] == [
        ("Revenue grew 12%.", [12]),
        ("Costs fell.", [3]),
        ("Margins rose.", [4, 5]),
    ]
    assert len(parsed.warnings) == 3
    # a JSON string is parsed the same way; an answer without claims is parsed as text
    assert parse_answer('{"claims": [{"text": "X", "pages": [2]}]}').claims[0].pages == [2]
    assert parse_answer({"answer": "Sales rose [p. 9]."}).claims[0].pages == [9]
    with pytest.raises(ValueError):
        parse_answer({"claims": "nope"})
    with pytest.raises(ValueError):
        parse_answer({"something": 1})


class ScriptedModel:
    name = "scripted"
    supports_images = False
    supports_json_schema = False

    def __init__(self, replies):
        self.replies = list(replies)

    def chat(self, requests):
        return [self.replies.pop(0) for _ in requests]


def test_decomposition_and_its_malformed_outputs() -> None:
    assert parse_decomposition('```json\n{"claims": ["A rose.", "B fell."]}\n```', "A rose and B fell.") == (
        ["A rose.", "B fell."],
        None,
    )
    for bad in ["", "no json", '{"claims": []}', '{"claims": [1, 2]}', '{"claims": "A"}', '["A", "B"]',
                '{"claims": ["' + "x" * 500 + '"]}']:
        parts, err = parse_decomposition(bad, "original")
        assert parts == ["original"] and err
    parsed = parse_answer("A rose and B fell [p. 3]. C grew [p. 5].")
    model = ScriptedModel([ChatResult('{"claims": ["A rose.", "B fell."]}'), ChatResult("", error="boom")])
    new = decompose(parsed, model)
    assert [(c.claim_id, c.text, c.pages, c.source) for c in new.claims] == [
        ("c1.1", "A rose.", [3], "decomposed"),
        ("c1.2", "B fell.", [3], "decomposed"),
        ("c2", "C grew.", [5], "marker"),
    ]
    assert any("boom" in w for w in new.warnings)
    assert new.sentences[0].claims == [0, 1] and new.sentences[1].claims == [2]
