"""The shared text module: terms, stop words, stemming, sentences, windows, question cues."""

from __future__ import annotations

import pytest

from trident_local.text import (
    CLAIM_STOP_WORDS,
    STOP_WORDS,
    TRACE_STOP_WORDS,
    answer_type,
    content_terms,
    expected_type,
    identifiers,
    page_sentences,
    question_kind,
    sentence_spans,
    sentences,
    stem,
    term_pairs,
    terms,
    windows,
)


def test_terms_stem_and_drop_stop_words() -> None:
    assert terms("The revenues were growing in 2,020 and 12.5%") == ["revenu", "grow", "2020", "12.5%"]
    assert term_pairs("Running tables") == [("run", "Running"), ("tabl", "tables")]
    assert stem("studies") == "studi"
    assert content_terms("How many first studies were there in 2020?") == ["first", "studi"]


def test_stop_lists_differ_where_results_depend_on_them() -> None:
    assert "first" in STOP_WORDS and "first" not in CLAIM_STOP_WORDS  # a claim's "first" must still count
    assert "paper" in TRACE_STOP_WORDS and "paper" not in STOP_WORDS
    assert "number" in STOP_WORDS and "number" in TRACE_STOP_WORDS


def test_identifiers_keep_names_whole() -> None:
    assert identifiers("GPT-4 beats BM25 by 3.5 points") == ["GPT-4", "beats", "BM25", "by", "3.5", "points"]


def test_sentence_styles() -> None:
    text = "Smith et al. report gains (e.g. on Fig. 2). The model\nworks. [3] shows more."
    assert sentences(text) == ["Smith et al. report gains (e.g. on Fig. 2).", "The model works.", "[3] shows more."]
    assert page_sentences("Title\n\nFirst one. 2 more.") == ["Title", "First one.", "2 more."]
    text = "One. Two!  Three? Four"
    assert [text[a:b] for a, b in sentence_spans(text)] == ["One.", "Two!", "Three?", "Four"]
    assert sentence_spans("   ") == []


def test_sentence_spans_abbreviations_and_lists() -> None:
    text = "See Fig. 3 now. Next.\n- item one\n2. item two"
    assert [text[a:b] for a, b in sentence_spans(text)] == ["See Fig. 3 now.", "Next.", "- item one", "2. item two"]


def test_windows() -> None:
    assert windows(["a b c", "d e", "f g h i"], 5) == ["a b c d e", "f g h i"]
    assert windows(["a b c d e f g"], 3) == ["a b c d e f g"]  # a long sentence stands alone
    assert windows([], 3) == []


@pytest.mark.parametrize(("q", "kind", "atype", "expect"), [
    ("How many employees were there?", "short-extractive", "numeric", "count"),
    ("Which page shows the revenue?", "open", "location", "money"),
    ("Which of the following is true: (A) x (B) y", "multiple-choice", "other", "text"),
    ("Why did costs rise in 2020?", "open", "other", "text"),
])
def test_question_cues(q: str, kind: str, atype: str, expect: str) -> None:
    assert (question_kind(q), answer_type(q), expected_type(q)) == (kind, atype, expect)


def test_the_copied_stop_words_are_scikit_learns() -> None:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from trident_local.stop_words_en import ENGLISH_STOP_WORDS as copied

    assert copied == ENGLISH_STOP_WORDS
