"""Questions that ask for one line item of one fiscal year, read from the statement's table; no model.

"What is the year end FY2019 total amount of inventories for Best Buy? Answer in USD millions." names
a line item (inventories), a fiscal year (2019) and the unit of the answer. Such a question has a
checkable answer without a model: the row of the document whose label names the item (or a common
name for it, :data:`~trident_local.generate.formula.SYNONYMS`), read in the column its fiscal year
heads, as :mod:`.formula` reads the operands of a defined metric, and converted to the unit asked for
("(in thousands)" on the page, "in USD billions" in the question). The answer cites that cell and its
row label.

The question is read conservatively: one year, an item of at most :data:`MAX_ITEM_WORDS` words left
after the question words, the company, the year and the unit are taken out, and nothing that asks for
a computation ("change", "ratio", "margin", "average", "growth", ...). Anything else gives no answer
here, and the evidence-first strategy answers as it would have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trident_local.generate.formula import FormulaAnswer, Lookup, decimals
from trident_local.generate.metric_forms import SCALES, asked_scale, asking_sentence

MAX_ITEM_WORDS = 7
# A label must be mostly the item's name: "Total long-term debt" (half of it "total debt") is another
# item, where a defined metric's operand may read it (its definition says which item it means)
MIN_ITEM_MATCH = 0.6
# a question that asks for a computation over items, a share or a comparison is not one item's value
_COMPUTED = re.compile(r"\b(?:change|changes|growth|grow|grew|ratio|margin|average|mean|cagr|percent|percentage|"
                       r"turnover|rate|difference|increase|decrease|compared?|between|yoy|year-over-year|"
                       r"per cent|share of|proportion|times|sum|combined|defined?|divided|minus|plus|versus|vs)\b|%",
                       re.I)
_ASKS = re.compile(r"^(?:.*?\b)?(what|how much)\b(.*)$", re.I | re.S)
_YEARS = re.compile(r"\bFY ?((?:19|20)\d\d)\b|\b((?:19|20)\d\d)\b", re.I)
_UNIT_ASKED = re.compile(r"\b(?:please\s+)?(?:state\s+)?(?:answer|anwser|respond)\b.*$", re.I)
_MONTH = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december|"
          r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?")
# where the year sits in the sentence: "year end FY2019", "at the end of FY2019", "for the fiscal year
# ending January 28, 2023", "as of December 31, 2017", "in FY 2021", "in 2017"
_WHEN = re.compile(
    rf"\b(?:(?:for|in|at|during|of)\s+)?(?:the\s+)?(?:(?:fiscal\s+)?year\s+end(?:ed|ing)?|year[- ]end|end\s+of|"
    rf"fiscal\s+year|as\s+of)?\s*(?:{_MONTH}\s+\d{{1,2}},?\s+)?(?:FY ?)?(?:19|20)\d\d\b", re.I)
# what is left must read as an item's name: no verb or question word ("how much time was spent with ..."),
# no "X to Y" (a ratio named by its parts), only letters and the punctuation of statement labels
_NOT_AN_ITEM = re.compile(r"\b(?:was|were|is|are|be|did|does|do|has|have|had|there|which|who|whom|how|many|much|"
                          r"to|return|ratio|cycle)\b|[^A-Za-z&,' -]", re.I)
_PAREN = re.compile(r"\([^)]*\)")
# where the question says to read it, not what: "... based on cash flow statement", "according to the 10-K"
_SOURCE = re.compile(r"\s+\b(?:based on|according to|as (?:shown|reported|stated) in|per the)\b.*$", re.I)
_POSSESSIVE = re.compile(r"\b(?:[A-Z][\w&.-]*\s+){0,3}[A-Z][\w&.-]*'s?(?=\s)")  # "Lockheed Martin's"
_COMPANY = re.compile(r"\b(?:for|of|at|by)\s+(?:the\s+)?(?:[A-Z]|\d+[A-Z])[\w&.-]*(?:\s+[A-Z][\w&.-]*){0,3}\b")  # "for 3M"
# "did Nike have", "does Best Buy have", "did American Water Works pay out in"
_DID = re.compile(r"\b(?:did|does|do|has|had|have)\s+(?:[A-Z][\w&.-]*\s+){1,4}"
                  r"(?:have|hold|report|record|pay\s+out\s+in|pay\s+out|pay\s+in|pay|spend\s+on|spend|"
                  r"generate|incur)\b", re.I)
_FILLER = re.compile(r"^(?:is|was|are|were|the|amount|amounts|value|values|total amount of|amount of|"
                     r"value of|level of|figure for|reported|unadjusted|company's|of|in|on)\b\s*", re.I)
_TAIL = re.compile(r"\s*\b(?:amount|amounts|value|figure|balance|reported|for|of|in|on|at|the)\s*$", re.I)


@dataclass
class ItemQuestion:
    """What a one-item question asks for: the item's name, its fiscal year, and the unit of the answer
    (a scale to millions, as :data:`~trident_local.generate.metric_forms.SCALES`; None: as the page prints it)."""

    item: str
    year: int
    unit: float | None = None


def item_question(question: str) -> ItemQuestion | None:
    """The item, year and unit ``question`` asks for, or None where it is not a one-item question."""
    sentence = asking_sentence(question)
    if not sentence or _COMPUTED.search(sentence):
        return None
    years = {int(a or b) for a, b in _YEARS.findall(sentence)}
    if len(years) != 1:
        return None
    unit = asked_scale(question)
    m = _ASKS.match(sentence)
    if m is None:
        return None
    rest = _SOURCE.sub(" ", _PAREN.sub(" ", _UNIT_ASKED.sub(" ", m.group(2))))
    rest = _WHEN.sub(" ", rest)
    rest = _POSSESSIVE.sub(" ", rest)
    rest = _DID.sub(" ", rest)
    rest = _COMPANY.sub(" ", rest)
    rest = re.sub(r"[?.!,;:]", " ", rest)
    rest = " ".join(rest.split())
    while True:
        trimmed = _TAIL.sub("", _FILLER.sub("", rest)).strip()
        if trimmed == rest:
            break
        rest = trimmed
    words = rest.split()
    if not words or len(words) > MAX_ITEM_WORDS or _NOT_AN_ITEM.search(rest) or not re.search(r"[a-z]", rest, re.I):
        return None
    return ItemQuestion(rest, years.pop(), unit)


_TRAILING_NAME = re.compile(r"\s+(?:for|of|at|by)\s+((?:[\w&.'-]+\s*){1,3})$", re.I)


def own_names(file_name: str, first_page: str) -> frozenset[str]:
    """Lower-case words a filing names its company with: its file name's ("COSTCO_2021_10K.pdf") and its
    first page's opening words ("Costco Wholesale Corporation ...")."""
    text = f"{re.sub(r'[_.-]+', ' ', file_name)} {' '.join(first_page.split()[:60])}"
    return frozenset(w.lower() for w in re.findall(r"[A-Za-z][\w&'-]*", text) if len(w) > 2)


def without_company(item: str, names: frozenset[str]) -> str:
    """``item`` without a trailing "for costco" whose words are all the document's own ``names`` (a company
    written in lower case, which the question's capitalised-name rule leaves in)."""
    m = _TRAILING_NAME.search(item)
    if m and names and all(w.lower() in names for w in m.group(1).split()):
        return item[:m.start()].strip()
    return item


def _amount(value: float, places: int) -> str:
    return f"{value:,.{places}f}"


def evaluate_item(question: str, lookup: Lookup, names: frozenset[str] = frozenset()) -> FormulaAnswer | None:
    """The line item ``question`` asks for, read with ``lookup`` and converted to the unit it asks for; the
    computation is written out only where the unit changes ("4.6 = 4,625 * 0.001"). ``names``: words the
    document names its company with (:func:`own_names`): an item that ends "for costco" unmatched is
    read again without them."""
    asked = item_question(question)
    if asked is None:
        return None
    op = lookup(asked.item, asked.year)
    if (op is None or op.match < MIN_ITEM_MATCH) and (bare := without_company(asked.item, names)) != asked.item:
        op = lookup(bare, asked.year)
    if op is None or op.match < MIN_ITEM_MATCH:
        return None
    target = op.scale if asked.unit is None else asked.unit
    value = abs(op.value) / target  # "(4,625)" in a cash flow statement is 4,625 spent
    printed_places = len(op.printed.split(".", 1)[1]) if "." in op.printed else 0
    if op.scale == target:
        places, shown = printed_places, ""
    else:
        places = decimals(question, default=1 if target >= SCALES["billions"] else 0)  # $4.6 billion, $303 million
        factor = f"{op.scale / target:.9f}".rstrip("0").rstrip(".")
        shown = f"{_amount(value, places)} = {op.printed.strip('()-')} * {factor}"
    if re.search(r"round", question, re.I):
        places = decimals(question)
    return FormulaAnswer(value, _amount(value, places), shown, [op])
