"""BM25's reading of a page: number spellings meet, printed headings are found."""

from __future__ import annotations

import bm25s

from trident_local.docs.model import Page, TextBlock
from trident_local.docs.sections import page_headings
from trident_local.retrieve.bm25 import keyword_passage, tokenize_query
from trident_local.text import keyword_text, stemmer


def test_number_spellings_meet() -> None:
    for spelling in ("1,577", "(1,577)", "$1577.00", "1577", "1577.0"):
        assert tokenize_query(spelling) == ["1577"], spelling
    assert tokenize_query("95.20") == tokenize_query("95.2") == ["95_2"]
    assert keyword_text("FY2019 revenue") == "FY 2019 revenue"
    assert keyword_text("version 2.1.3 in 2019.") == "version 2.1.3 in 2019."  # not a decimal, not a sum


def _page(blocks: list[TextBlock]) -> Page:
    return Page(number=1, text="\n".join(b.text for b in blocks), width=600, height=800, blocks=blocks)


def test_bold_statement_title_at_body_size_is_a_heading() -> None:
    page = _page([
        TextBlock("Consolidated Balance Sheets", (50, 40, 300, 52), 8.8, bold=True),
        TextBlock("$ in millions, except per share amounts", (50, 60, 300, 72), 8.8),
        TextBlock("Merchandise inventories 5,409 5,209", (50, 120, 400, 132), 8.8),
        TextBlock("Total assets", (50, 700, 300, 712), 8.8, bold=True),  # bold, but at the foot of the page
    ])
    assert page_headings(page) == ["Consolidated Balance Sheets"]
    passage = keyword_passage(page)
    assert passage.count("Consolidated Balance Sheets") == 3 and "5409" in passage


def test_headings_lift_the_statement_page_over_a_passing_mention() -> None:
    statement = _page([TextBlock("Consolidated Balance Sheets", (50, 40, 300, 52), 9, bold=True),
                       TextBlock("Inventories 5,409 Receivables 1,015 Cash 1,980", (50, 80, 400, 92), 9)])
    mention = _page([TextBlock("Notes", (50, 40, 300, 52), 9, bold=True),
                     TextBlock("see the balance sheets for inventories and the sheets of the balance of "
                               "cash and receivables", (50, 80, 400, 92), 9)])
    tokens = bm25s.tokenize([keyword_passage(statement), keyword_passage(mention)], stopwords="en",
                            stemmer=stemmer(), show_progress=False)
    bm = bm25s.BM25()
    bm.index(tokens, show_progress=False)
    scores = bm.get_scores(tokenize_query("inventories in the balance sheet"))
    assert scores[0] > scores[1]
