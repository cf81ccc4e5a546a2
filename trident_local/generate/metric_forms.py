"""Standard financial metrics a question names without defining them, written as definitions.

"What is the FY2018 - FY2020 3 year average of capex as a % of revenue?", "the FY2019 operating income %
margin", "the year-over-year change in operating income from FY2015 to FY2016", "the 2 year total
revenue CAGR from FY2020 to FY2022": each is a fixed formula over line items, the same in every filing.
:func:`metric_form` writes the formula out in the grammar of :mod:`.formula` ("(FY2018 capex) /
(FY2018 revenue)"), so it is computed, written out and cited like a metric the question defines. A
margin is over revenue; a share, margin, change and growth rate are in percent. Anything else (a form
not listed here, years that do not match "3 year") gives None.

Named ratios ("What is current ratio in FY2021 for Nike?", "the FY2019 fixed asset turnover ratio",
"Amazon's FY2017 days payable outstanding (DPO)", "EBITDA for costco in FY2021") are computed by their
textbook definitions (:data:`NAMED`), for the year the question asks and the one before it where the
definition averages a balance; a question that defines its metric is computed by its own definition
instead. "X to Y ratio" ("R&D to asset ratio", "sales to working capital ratio") is X over Y of the
same year ("Average Y": over that year and the one before), "X as a % of Y" and a named margin are
shares in percent. A ratio is a plain number unless the question asks for a percentage; an amount
(working capital, EBITDA, free cash flow) is in the unit the question asks for.
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
_AVERAGE_RATIO = re.compile(rf"{_SPAN}{_LENGTH}average\s+(?:of\s+)?(?:the\s+)?(.+?)\s+to\s+(.+?)\s+ratio\b(?:{_FROM_TO})?",
                            re.I)
_SHARE = re.compile(rf"\b(?:{_FYS}\s+)?(?:the\s+)?([A-Za-z&][\w&' -]*?)\s+as\s+an?\s+(?:%|percent(?:age)?)\s+of\s+"
                    rf"(?:total\s+)?(.+?){_END}", re.I)
_AVERAGE_MARGIN = re.compile(rf"{_SPAN}{_LENGTH}average\s+(?:of\s+)?(?:the\s+)?(.+?)\s+%\s+margin(?:{_FROM_TO})?", re.I)
_MARGIN = re.compile(rf"\b{_FYS}\s+(.+?)\s+%\s+margin\b", re.I)
_CHANGE = re.compile(rf"\b(?:year-over-year|year over year|yoy)\s+(?:percent(?:age)?\s+)?change\s+in\s+(.+?){_FROM_TO}",
                     re.I)
_CAGR = re.compile(rf"\b{_LENGTH}(?:total\s+)?(.+?)\s+cagr{_FROM_TO}", re.I)
_PAREN = re.compile(r"\s*\([^)]*\)")
_LEAD = re.compile(r"^(?:the|a|an|total)\s+", re.I)


@dataclass
class MetricForm:
    """The metric as a definition in :mod:`.formula`'s grammar; ``percent``: the result is a percentage;
    ``unit``: an amount's scale to millions as the question asks it (``None``: not an amount)."""

    expression: str
    percent: bool = True
    unit: float | None = None


# Textbook definitions, {y}: the year asked, {p}: the year before. A turnover or a number of days
# averages the balance over the two years; a return is over the year's closing balance.
_AV = "(average {x} between FY{p} and FY{y})"
NAMED: dict[str, str] = {
    "current ratio": "(FY{y} total current assets) / (FY{y} total current liabilities)",
    "quick ratio": "((FY{y} cash and cash equivalents) + (FY{y} short-term investments) + "
                   "(FY{y} accounts receivable)) / (FY{y} total current liabilities)",
    "cash ratio": "(FY{y} cash and cash equivalents) / (FY{y} total current liabilities)",
    "working capital": "(FY{y} total current assets) - (FY{y} total current liabilities)",
    "inventory turnover": "(FY{y} cogs) / " + _AV.format(x="inventory", p="{p}", y="{y}"),
    "receivables turnover": "(FY{y} revenue) / " + _AV.format(x="accounts receivable", p="{p}", y="{y}"),
    "payables turnover": "(FY{y} cogs) / " + _AV.format(x="accounts payable", p="{p}", y="{y}"),
    "dio": "365 * " + _AV.format(x="inventory", p="{p}", y="{y}") + " / (FY{y} cogs)",
    "dso": "365 * " + _AV.format(x="accounts receivable", p="{p}", y="{y}") + " / (FY{y} revenue)",
    "dpo": "365 * " + _AV.format(x="accounts payable", p="{p}", y="{y}") + " / (FY{y} cogs)",
    "cash conversion cycle": "(FY{y} dio) + (FY{y} dso) - (FY{y} dpo)",
    "fixed asset turnover": "(FY{y} revenue) / " + _AV.format(x="pp&e", p="{p}", y="{y}"),
    "asset turnover": "(FY{y} revenue) / " + _AV.format(x="total assets", p="{p}", y="{y}"),
    "return on assets": "(FY{y} net income) / (FY{y} total assets)",
    "return on equity": "(FY{y} net income) / (FY{y} total shareholders equity)",
    "operating cash flow ratio": "(FY{y} cash from operations) / (FY{y} total current liabilities)",
    "interest coverage": "(FY{y} operating income) / (FY{y} interest expense)",
    "effective tax rate": "(FY{y} income tax expense) / (FY{y} income before income taxes)",
    "ebitda": "(FY{y} operating income) + (FY{y} d&a)",
    "retention ratio": "((FY{y} net income) - (FY{y} cash dividends)) / (FY{y} net income)",
    "free cash flow": "(FY{y} cash from operations) - (FY{y} capex)",
    "dividend payout ratio": "(FY{y} cash dividends) / (FY{y} net income)",
    "debt ratio": "(FY{y} total liabilities) / (FY{y} total assets)",
    "equity multiplier": "(FY{y} total assets) / (FY{y} total shareholders equity)",
    "return on average equity": "(FY{y} net income) / " + _AV.format(x="total shareholders equity", p="{p}", y="{y}"),
    "gross margin": "(FY{y} gross profit) / (FY{y} revenue)",
    "operating margin": "(FY{y} operating income) / (FY{y} revenue)",
    "net margin": "(FY{y} net income) / (FY{y} revenue)",
    "ebitda margin": "(FY{y} ebitda) / (FY{y} revenue)",
}
# Items a statement may leave unprinted, from the rows it does print: read this way where the item's own row
# is not on the statement that prints such items (Boeing's and Coca-Cola's balance sheets have no "Total
# liabilities" row, and a note's is a segment's or a plan's; General Mills' income statement has no gross
# margin row, and a quarterly table's is a quarter's)
DERIVED: dict[str, str] = {
    "total liabilities": "(FY{y} total liabilities and equity) - (FY{y} total equity)",
    "gross profit": "(FY{y} revenue) - (FY{y} cogs)",
}
PERCENTS = frozenset({"gross margin", "operating margin", "net margin", "ebitda margin"})  # answered in percent
AMOUNTS = frozenset({"working capital", "ebitda", "free cash flow"})
# how questions name them (lower case; matched as whole words)
_ALIASES: tuple[tuple[str, str], ...] = (
    (r"current ratio|working capital ratio", "current ratio"),
    (r"quick ratio|acid[- ]test ratio", "quick ratio"),
    (r"cash[ _]ratio", "cash ratio"),
    (r"inventory turnover(?: ratio)?", "inventory turnover"),
    (r"(?:accounts )?receivables? turnover(?: ratio)?", "receivables turnover"),
    (r"(?:accounts )?payables? turnover(?: ratio)?", "payables turnover"),
    (r"days (?:of )?inventory outstanding|days (?:sales )?(?:of|in) inventory|inventory days|\(?dio\)?", "dio"),
    (r"days sales outstanding|\(?dso\)?", "dso"),
    (r"days payables? outstanding|\(?dpo\)?", "dpo"),
    (r"cash conversion cycle|\(?ccc\)?", "cash conversion cycle"),
    (r"fixed asset turnover(?: ratio)?", "fixed asset turnover"),
    (r"(?:total )?asset turnover(?: ratio)?", "asset turnover"),
    (r"gross (?:profit )?margin", "gross margin"),
    (r"operating (?:profit )?margin", "operating margin"),
    (r"net (?:profit |income )?margin", "net margin"),
    (r"(?:unadjusted )?ebitda margin", "ebitda margin"),
    (r"return on (?:total )?assets?|\(?roa\)?", "return on assets"),
    (r"(?:after-tax )?return on average (?:shareholders'? |stockholders'? )?equity", "return on average equity"),
    (r"return on (?:shareholders'? |stockholders'? )?equity|\(?roe\)?", "return on equity"),
    (r"operating cash flow ratio", "operating cash flow ratio"),
    (r"interest coverage(?: ratio)?|times interest earned(?: ratio)?", "interest coverage"),
    (r"free cash flows?|\(?fcf\)?", "free cash flow"),
    (r"(?:dividend )?payout ratio", "dividend payout ratio"),
    (r"debt ratio", "debt ratio"),
    (r"equity multiplier", "equity multiplier"),
    (r"effective tax (?:rate|ratio)", "effective tax rate"),
    (r"retention ratio", "retention ratio"),
    (r"working capital", "working capital"),
    (r"(?:unadjusted )?ebitda", "ebitda"),
)
_ASKS_PERCENT = re.compile(r"\b(?:percent(?:age)?s?|per cent)\b|%", re.I)
_YEAR = re.compile(r"\bFY ?((?:19|20)\d\d)\b|\b((?:19|20)\d\d)\b", re.I)
SCALES = {"thousands": 1e-3, "millions": 1.0, "billions": 1e3}  # to millions, the unit values are kept in
# the unit an answer is asked in: "Answer in USD millions", "in units of thousands", "(in $ billions)"
_UNIT = re.compile(r"\b(?:in|usd|us\$|\$)\s+(?:usd\s+|us\$\s+|units of\s+|us dollars?\s+)?"
                   r"(thousands?|millions?|billions?)\b", re.I)
_SENTENCES = re.compile(r"(?<=[?!])\s*|(?<=\.)\s+|:\s+(?=(?:what|how)\b)", re.I)
# "X to Y ratio": each side a few words of a line item or a named metric
_SIDE = r"[A-Za-z&][\w&'’-]*(?:\s+[A-Za-z&][\w&'’-]*){0,4}?"
_X_TO_Y = re.compile(rf"({_SIDE})\s+to\s+({_SIDE})\s+ratio\b", re.I)
# without the word "ratio", only what the question asks for outright ("what is long-term debt to total
# liabilities for Costco in FY2021?"), not prose ("jobs are difficult to find in their community")
_X_TO_Y_ASKED = re.compile(rf"^\s*(?:what\s+(?:is|was)|what's)\s+(?:the\s+)?(?:[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*){{0,3}}"
                           rf"['’]s\s+)?(?:FY ?\d{{4}}\s+)?({_SIDE})\s+to\s+({_SIDE})(?=\s*(?:for|of|in|at)\b|\s*[?.,]|\s*$)",
                           re.I)
# the words before a ratio's first item: "what is", "Amazon's FY2017", "the"
_BEFORE_ITEM = re.compile(r"^.*\b(?:is|are|was|the|what's|fy ?\d{4})\s+|^.*'s\s+", re.I)
_NOT_ITEM = re.compile(r"\b(?:what|how|which|who|did|does|do|has|have|compared?|relative|due|according|equal|"
                       r"related|attributable|close|up|down|from|ratio|change|growth|increase|decrease|round|"
                       r"answer|decimals?|places?|nearest)\b", re.I)


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
    if m := _AVERAGE_RATIO.search(q):
        years = _years(m.group(1), m.group(2), m.group(3), (m.group(6), m.group(7)))
        if not years:
            return None
        share = _share(_item(m.group(4)), _item(m.group(5)), years)
        percent = bool(_ASKS_PERCENT.search(q))
        return MetricForm(share if percent else share.removesuffix(" * 100"), percent=percent)
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
    if (m := _SHARE.search(q)) and (year := int(m.group(1)) if m.group(1) else _asked_year(q)):
        x = _BEFORE_ITEM.sub("", m.group(2)).strip()
        if x and not _NOT_ITEM.search(x):
            return MetricForm(_share(x, _item(m.group(3)), [year]).replace(") / 1 * 100", ") * 100"))
    return named_metric(q)


def sentences(question: str) -> list[str]:
    """The question's sentences ("what's" read as "what is"), a colon before "what" or "how" ending one."""
    text = re.sub(r"\bwhat's\b", "what is", question, flags=re.I)
    return [p for p in _SENTENCES.split(text) if p.strip()]


def asking_sentence(question: str) -> str:
    """The sentence that asks ("... Here's the question: what is Boeing's ... ?"), or "" when none does."""
    asking = [p for p in sentences(question) if re.search(r"\b(?:what|how much)\b", p, re.I)]
    return asking[0] if asking else ""


def asked_scale(question: str) -> float | None:
    """The unit the answer is asked in, as a scale to millions (:data:`SCALES`); None when not asked."""
    m = _UNIT.search(question)
    return SCALES[m.group(1).lower().rstrip("s") + "s"] if m else None


def _asked_year(question: str) -> int | None:
    """The one year the question asks about ("FY2021", "in FY 2019", "ending January 28, 2023")."""
    years = {int(a or b) for a, b in _YEAR.findall(question)}
    return years.pop() if len(years) == 1 else None


def _named(text: str, whole: bool = False) -> str | None:
    """The :data:`NAMED` metric ``text`` names (``whole``: ``text`` is the name, "unadjusted EBITDA")."""
    low = " ".join(text.lower().split())
    for rx, name in _ALIASES:
        if (re.fullmatch(rf"(?:{rx})", low) if whole else  # "margin before depreciation" is another metric
                re.search(rf"(?<![\w-])(?:{rx})(?![\w-])(?!\s+(?:before|excluding|after|adjusted|ex)\b)", low)):
            return name
    return None


def named_expression(phrase: str, year: int) -> str | None:
    """The textbook definition of the metric ``phrase`` names, for fiscal year ``year``, or None: how an
    operand that is itself a metric ("FY2015 working capital", "FY2021 EBITDA") is computed."""
    name = _named(phrase, whole=True)
    return None if name is None else NAMED[name].format(y=year, p=year - 1)


def derived_expression(item: str, year: int) -> str | None:
    """How the statement's own rows give ``item`` (:data:`DERIVED`) for fiscal year ``year``, or None."""
    form = DERIVED.get(" ".join(item.lower().split()))
    return None if form is None else form.format(y=year)


def _side(item: str, year: int) -> str:
    """One side of "X to Y ratio": the item in ``year``, or its average over ``year`` and the year before
    ("Interest Expense to Average Long-Term Debt")."""
    if m := re.match(r"average\s+(.+)$", item, re.I):
        return f"(average {m.group(1)} between FY{year - 1} and FY{year})"
    return f"(FY{year} {item})"


def named_metric(question: str) -> MetricForm | None:
    """A named ratio or amount of :data:`NAMED`, or "X to Y (ratio)", for the one year the question asks
    about; None when it names neither or asks about several years."""
    sentence = asking_sentence(question) or next(iter(sentences(question)), "")
    year = _asked_year(sentence) or _asked_year(question)
    if year is None:
        return None
    expression, name = None, None
    if (m := _X_TO_Y.search(sentence) or _X_TO_Y_ASKED.search(sentence)) is not None:
        x, y = (_BEFORE_ITEM.sub("", g).strip() for g in m.groups())
        if x and y and not _NOT_ITEM.search(x) and not _NOT_ITEM.search(y):
            expression = f"{_side(x, year)} / {_side(y, year)}"
    if expression is None:
        name = _named(sentence)
        if name is None:
            return None
        expression = NAMED[name].format(y=year, p=year - 1)
    if name in AMOUNTS:
        scale = asked_scale(question) or 1.0
        if scale != 1.0:
            expression = f"({expression}) / {scale:g}"
        return MetricForm(expression, percent=False, unit=scale)
    if name in PERCENTS or _ASKS_PERCENT.search(question):
        return MetricForm(f"({expression}) * 100", percent=True)
    return MetricForm(expression, percent=False)
