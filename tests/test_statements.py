"""Which primary statements a question names, which pages of a filing are those statements, and line items
read from the statements a question names before any other page that prints them."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from pdf_factory import indexed, statement_page

from trident_local.generate.ask import ask
from trident_local.generate.statements import BALANCE, CASH_FLOW, INCOME, named_statements, statement_kind


@pytest.mark.parametrize(("question", "kinds"), [
    ("Basing your judgment by information plainly provided in the statement of income, what is ...", {INCOME}),
    ("Please utilize information provided primarily within the statement of cash flows and the statement of "
     "income.", {INCOME, CASH_FLOW}),
    ("Calculate what was asked by utilizing the line items clearly shown in the P&L statement and the balance "
     "sheet.", {INCOME, BALANCE}),
    ("Answer the question asked by assuming you only had access to the cash flow statement.", {CASH_FLOW}),
    ("What is the FY2019 total amount of inventories for Best Buy?", set()),
])
def test_the_statements_a_question_names(question: str, kinds: set[str]) -> None:
    assert named_statements(question) == kinds


@pytest.mark.parametrize(("head", "kind"), [
    ("THE COCA-COLA COMPANY AND SUBSIDIARIES CONSOLIDATED STATEMENTS OF INCOME Year Ended December 31, 2017",
     INCOME),
    ("Table of Contents NIKE, Inc. Consolidated Statements of Income Year Ended May 31, (In millions", INCOME),
    ("INCOME STATEMENTS (In millions, except per share amounts) Year Ended June 30, 2016 2015", INCOME),
    ("JPMorgan Chase & Co. Consolidated balance sheets (unaudited) June 30, (in millions, except share data)",
     BALANCE),
    ("MGM RESORTS INTERNATIONAL AND SUBSIDIARIES CONSOLIDATED STATEMENTS OF CASH FLOWS (In thousands) Year",
     CASH_FLOW),
    # mentions, analyses, a table of contents and prose are not statements
    ("Off-Balance Sheet Arrangements and Aggregate Contractual Obligations Off-Balance Sheet Arrangements In", None),
    ("Analysis of Consolidated Statements of Income Percent Change Year Ended December 31, 2017 2016", None),
    ("Pension and other benefit amounts recognized in our consolidated balance sheets are as follows (in", None),
    ("TABLE OF CONTENTS Page Consolidated Statements of Income 72 Consolidated Statements of Comprehensive", None),
    ("CONSOLIDATED BALANCE SHEETS AND CASH FLOWS ANALYSIS Consolidated balance sheets analysis The following is "
     "a discussion of the significant changes between June 30", None),
    ("Impact of derivatives on the Consolidated balance sheets The following table summarizes information", None),
])
def test_a_page_is_a_statement_by_its_title(head: str, kind: str | None) -> None:
    assert statement_kind(head + " Revenues $ 36,397 $ 34,350") == kind


def _filing(path: Path) -> Path:
    """A summary table that restates an item (first), then the income statement that prints it."""
    doc = pymupdf.open()
    for title, value in (("Acme Company Selected Financial Data (restated, in millions)", "15,100"),
                         ("Acme Company Consolidated Statements of Income Year Ended December 31 (in millions)",
                          "16,830")):
        page = statement_page(doc, title, [("Cost of products sold", value, "17,347")])
        if value == "15,100":  # the words a page search for the question favours
            page.insert_textbox(pymupdf.Rect(40, 200, 560, 400), "Acme's cost of products sold in FY2019, restated: "
                                "how the income statement's cost of products sold compares. " * 3, fontsize=9)
    doc.save(path)
    return path


def test_a_line_item_is_read_from_the_statement_the_question_names(tmp_path: Path) -> None:
    idx = indexed(tmp_path, _filing(tmp_path / "acme_2019_10k.pdf"))
    question = "What is Acme's FY2019 cost of products sold? Answer using the income statement."
    a = ask(idx, question).answer
    assert a.text == "16,830" and [c.page for c in a.citations] == [2]
    # a question that names no statement reads the first page that prints the item, as before
    assert ask(idx, "What is Acme's FY2019 cost of products sold?").answer.text == "15,100"
