"""The primary financial statements a question names, and the pages of a filing that are those statements.

FinanceBench-style questions say where their line items are to be read: "basing your judgment on the
statement of income", "utilize the statement of cash flows and the statement of income", "the line
items clearly shown in the P&L statement and the balance sheet". A 10-K prints the same items again in
the MD&A, a five-year summary and the notes, sometimes with other scopes (a segment's capital
expenditures, a summary's restated revenue). A page is a statement when its title, in its first lines,
names one ("Consolidated Statements of Cash Flows", "CONSOLIDATED BALANCE SHEETS"); a note that only
mentions a statement further down is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

INCOME, BALANCE, CASH_FLOW = "income", "balance", "cash-flow"

# what a question calls each statement
_NAMED = {
    INCOME: re.compile(r"\b(?:income statements?|statements? of (?:consolidated )?(?:income|operations|earnings)|"
                       r"p\s*&\s*l|profit and loss|statements? of comprehensive income)\b", re.I),
    BALANCE: re.compile(r"\b(?:balance sheets?|statements? of financial (?:position|condition))\b", re.I),
    CASH_FLOW: re.compile(r"\b(?:cash flows? statements?|statements? of (?:consolidated )?cash flows?)\b", re.I),
}


def _heading(*phrases: str) -> re.Pattern[str]:
    """A pattern for ``phrases`` written as a heading: each word capitalised or in capitals ("of" in lower
    case too; "s?" an optional plural; "Consolidated" may follow "of": "Statements of Consolidated Income"),
    or in sentence case after "Consolidated" ("Consolidated balance sheets")."""
    def word(w: str) -> str:
        if w == "of":
            return "(?:of|Of|OF)(?: (?:Consolidated|CONSOLIDATED))?"
        base, plural = (w[:-2], "(?:s|S)?") if w.endswith("s?") else (w, "")
        return f"(?:{base[0].upper()}{base[1:]}|{base.upper()}){plural}"

    def sentence_case(p: str) -> str:  # "Consolidated statements of cash flows"
        return "Consolidated " + " ".join(f"{w[:-2]}s?" if w.endswith("s?") else w for w in p.split())

    alternatives = [" ".join(map(word, p.split())) for p in phrases] + [sentence_case(p) for p in phrases]
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b")


# how a filing titles each statement, capitalised as a heading is ("CONSOLIDATED BALANCE SHEETS",
# "Consolidated Statements of Income"): prose that mentions one ("recognized in our consolidated balance
# sheets", "Supplemental balance sheet information") writes it in lower case
_TITLE = {
    INCOME: _heading("statements? of income", "statements? of operations", "statements? of earnings",
                     "income statements?"),
    BALANCE: _heading("balance sheets?", "statements? of financial position", "statements? of financial condition"),
    CASH_FLOW: _heading("statements? of cash flows?", "cash flows? statements?"),
}
TITLE_CHARS = 250  # a statement's title is within the page's first characters (after a running header)
# the period or unit that follows a statement's title: "Year Ended December 31,", "(In millions ...)"
_PERIOD = re.compile(r"\b(?:years?|months|weeks|fiscal|december|january|february|march|april|may|june|july|"
                     r"august|september|october|november|at|as of|in (?:millions|thousands|billions))\b", re.I)
PERIOD_CHARS = 60
# a title the words before it make a mention: "Analysis of Consolidated Statements of Income", "Off-Balance
# Sheet Arrangements", "Notes to ...", "Supplemental ..."
_MENTION = re.compile(r"(?:\bof|\bto|\bin|\bour|\bthe|['’]s|analysis|supplemental|condensed|-)\s*(?:consolidated\s*)?$",
                      re.I)
# nor a title that heads something else: "CONSOLIDATED BALANCE SHEETS AND CASH FLOWS ANALYSIS"
_HEADS_OTHER = re.compile(r"\s*(?:and|analysis|data|information|classification)\b", re.I)


# the statement a line item is read from: a balance at the year's end, or a flow over the year
_HOME = (
    (CASH_FLOW, re.compile(r"\b(?:d&a|depreciation|amortization|cash from operations|operating cash flow|"
                           r"operating activities|capex|capital expenditures?|capital spending|dividends?|"
                           r"repurchases?|purchases? of property)\b", re.I)),
    (BALANCE, re.compile(r"\b(?:assets?|liabilit(?:y|ies)|cash and (?:cash )?equivalents|cash balance|"
                         r"short-term investments|receivables?|inventor(?:y|ies)|payables?|pp&e|"
                         r"property(?:,)? (?:plant )?and equipment|equity|debt|goodwill)\b", re.I)),
    (INCOME, re.compile(r"\b(?:revenues?|sales|cogs|cost of (?:goods sold|sales|revenues?)|gross profit|"
                        r"operating income|net income|net earnings|interest expense|income tax expense|"
                        r"income before income taxes|sg&a|r&d|research and development|eps|"
                        r"earnings per share)\b", re.I)),
)


def item_statement(item: str) -> str | None:
    """The statement that prints line item ``item`` (BALANCE, INCOME, CASH_FLOW), or None when its name
    does not say: a balance (assets, debt, inventory) is the balance sheet's, a flow the income
    statement's, and depreciation, capital spending and dividends are read from the cash flow statement."""
    for kind, pattern in _HOME:
        if pattern.search(item):
            return kind
    return None


def named_statements(question: str) -> set[str]:
    """The statements ``question`` names (INCOME, BALANCE, CASH_FLOW)."""
    return {kind for kind, pattern in _NAMED.items() if pattern.search(question)}


def statement_kind(page_text: str) -> str | None:
    """The statement a page is: a capitalised statement title in its first TITLE_CHARS characters, followed
    by a period or unit within PERIOD_CHARS, not introduced as a mention (_MENTION) nor heading something
    else (_HEADS_OTHER); None for any other page, a table of contents' "Consolidated Statements of
    Income 72" included."""
    head = " ".join(page_text.split())[:TITLE_CHARS]
    for m in sorted((m for pattern in _TITLE.values() for m in pattern.finditer(head)), key=lambda m: m.start()):
        before = head[max(0, m.start() - 25):m.start()]
        after = head[m.end():m.end() + PERIOD_CHARS]
        if _MENTION.search(before) or _HEADS_OTHER.match(after) or not _PERIOD.search(after):
            continue
        return next(kind for kind, pattern in _TITLE.items() if pattern.fullmatch(m.group()))
    return None


def statement_kinds(pages: Iterable[tuple[int, str]]) -> dict[int, str]:
    """Page number -> the statement it is, for the pages (number, text) that are one, in page order."""
    return {n: kind for n, text in pages if (kind := statement_kind(text)) is not None}
