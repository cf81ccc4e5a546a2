"""Standard financial metrics a question names without defining them, written as definitions.

"What is the FY2018 - FY2020 3 year average of capex as a % of revenue?", "the FY2019 operating income %
margin", "the year-over-year change in operating income from FY2015 to FY2016", "the 2 year total
revenue CAGR from FY2020 to FY2022": each is a fixed formula over line items, the same in every filing.
:func:`metric_form` writes the formula out in the grammar of :mod:`.formula` ("(FY2018 capex) /
(FY2018 revenue)"), so it is computed, written out and cited like a metric the question defines. A
margin is over revenue; a share, margin, change and growth rate are in percent. Anything else (a form
not listed here, years that do not match "3 year") gives None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_N = {"two": 2, "three": 3, "four": 4, "five": 5}
_FYS = r"FY ?(\d{4})"
_SPAN = rf"(?:{_FYS}\s*(?:-|–|to|through)\s*{_FYS}\s+)?"  # "FY2018 - FY2020 " before the form
_LENGTH = r"(\d|two|three|four|five)[ -]year\s+"
_END = r"(?=\s+(?:for|from|of|in|at)\s|\s*[?.,]|\s*$)"
_FROM_TO = rf"\s+from\s+{_FYS}\s+to\s+{_FYS}"
_AVERAGE_SHARE = re.compile(rf"{_SPAN}{_LENGTH}average\s+(?:of\s+)?(?:the\s+)?(.+?)\s+as\s+an?\s+(?:%|percent(?:age)?)\s+"
                            rf"of\s+(?:total\s+)?(.+?){_END}(?:{_FROM_TO})?", re.I)
_AVERAGE_MARGIN = re.compile(rf"{_SPAN}{_LENGTH}average\s+(?:of\s+)?(?:the\s+)?(.+?)\s+%\s+margin(?:{_FROM_TO})?", re.I)
_MARGIN = re.compile(rf"\b{_FYS}\s+(.+?)\s+%\s+margin\b", re.I)
_CHANGE = re.compile(rf"\b(?:year-over-year|year over year|yoy)\s+(?:percent(?:age)?\s+)?change\s+in\s+(.+?){_FROM_TO}",
                     re.I)
_CAGR = re.compile(rf"\b{_LENGTH}(?:total\s+)?(.+?)\s+cagr{_FROM_TO}", re.I)
_PAREN = re.compile(r"\s*\([^)]*\)")
_LEAD = re.compile(r"^(?:the|a|an|total)\s+", re.I)


@dataclass
class MetricForm:
    """The metric as a definition in :mod:`.formula`'s grammar; ``percent``: the result is a percentage."""

    expression: str
    percent: bool = True


def _item(text: str) -> str:
    return _LEAD.sub("", " ".join(text.split())).strip()


def _years(first: str | None, last: str | None, length: str | None, tail: tuple[str | None, str | None]) -> list[int]:
    """The fiscal years of an "N year average" ("FY2018 - FY2020" before it or "from FY2018 to FY2020"
    after it); [] when they are not stated or do not span N years."""
    a, b = (first, last) if first else tail
    if not a or not b:
        return []
    years = list(range(int(a), int(b) + 1))
    n = _N.get((length or "").lower()) or (int(length) if length and length.isdigit() else len(years))
    return years if len(years) == n and n >= 2 else []


def _share(x: str, y: str, years: list[int]) -> str:
    parts = " + ".join(f"(FY{t} {x}) / (FY{t} {y})" for t in years)
    return f"({parts}) / {len(years)} * 100"


def metric_form(question: str) -> MetricForm | None:
    """The standard metric ``question`` names, as an expression over fiscal-year line items, or None."""
    q = _PAREN.sub("", question)
    if m := _AVERAGE_SHARE.search(q):
        years = _years(m.group(1), m.group(2), m.group(3), (m.group(6), m.group(7)))
        return MetricForm(_share(_item(m.group(4)), _item(m.group(5)), years)) if years else None
    if m := _AVERAGE_MARGIN.search(q):
        years = _years(m.group(1), m.group(2), m.group(3), (m.group(5), m.group(6)))
        return MetricForm(_share(_item(m.group(4)), "revenue", years)) if years else None
    if m := _CHANGE.search(q):
        x, a, b = _item(m.group(1)), m.group(2), m.group(3)
        return MetricForm(f"((FY{b} {x}) - (FY{a} {x})) / (FY{a} {x}) * 100")
    if m := _CAGR.search(q):
        x, a, b = _item(m.group(2)), int(m.group(3)), int(m.group(4))
        if b <= a:
            return None
        return MetricForm(f"(((FY{b} {x}) / (FY{a} {x})) ^ (1 / {b - a}) - 1) * 100")
    if m := _MARGIN.search(q):
        return MetricForm(_share(_item(m.group(2)), "revenue", [int(m.group(1))]).replace(") / 1 * 100", ") * 100"))
    return None
