"""Metrics the question defines, computed from the line items of the document's tables; no model.

Financial questions often state their metric: "Inventory turnover ratio is defined as: (FY2021 COGS) /
(average inventory between FY2020 and FY2021)". Such a question has a checkable answer without a
model: each line item the definition names is looked up as a table row of the document (by its label,
or a common name for it: COGS is "cost of sales" in one filing and "cost of goods sold" in another),
its value read in the column of the fiscal year the definition asks for and scaled by the statement's
"(in thousands)" / "(in millions)", and the definition evaluated. The answer is written out with its
operands as printed ("3.46 = 28,925 / ((8,420 + 7,367) / 2)"), so a reader finds each one on its page
and the citations point at those cells.

Handled: + - * / and parentheses (also "divided by", "less", "minus", "plus", "times"), numbers,
"average X between FYa and FYb", "change in X between FYa and FYb", a line item with or without its
fiscal year (without: the year the question asks about), and names defined elsewhere in the question
("CCC is defined as: DIO + DSO - DPO. DIO is defined as: ..."). Anything else (an item no table row
matches, a year no column heads, a metric with no definition) gives no answer here, and the
evidence-first strategy answers as it would have.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from trident_local.generate.metric_forms import SCALES, derived_expression, metric_form, named_expression
from trident_local.generate.spans import to_number
from trident_local.regions.layout import Cell, PageLayout, Region
from trident_local.regions.locate import numbers, printed_numbers

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.store.index_store import IndexStore

# "X is defined as: EXPR." / "Define X as EXPR." (EXPR runs to the end of its sentence; "3.5" is not one)
_DEFINED = re.compile(
    r"(?:^|[.?!]\s+)(?:([^.?!]{1,80}?) (?:is|are) defined as:?|Define ([^.?!]{1,80}?) as)\s+(.+?)(?=\.\s|\.?$)",
    re.I | re.S)
_WORD_OPS = [(r"\bdivided by\b", "/"), (r"\bmultiplied by\b", "*"), (r"\btimes\b", "*"), (r"\bless\b", "-"),
             (r"\bminus\b", "-"), (r"\bplus\b", "+")]
_HEAD = re.compile(r"[^.?!]*\b(?:is|are) defined as|\bDefine\b", re.I)
_FY = re.compile(r"\bFY ?((?:19|20)\d\d)\b", re.I)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_AVERAGE = re.compile(r"^(?:the )?average (?:of )?(.+?) between FY ?(\d{4}) and FY ?(\d{4})$", re.I)
_CHANGE = re.compile(r"^(?:the )?change in (.+?) between FY ?(\d{4}) and FY ?(\d{4})$", re.I)
# words that say where or how an item is reported, not which item it is
_QUALIFIER = re.compile(r"\b(?:from|in|on|per) the [\w&' ]*?statements?\b|\bunadjusted\b|\bas reported\b", re.I)
_DECIMALS = re.compile(r"round(?:ed)?[^.]*?\bto (?:the nearest )?(one|two|three|four|\d) decimal", re.I)
_SCALE = re.compile(r"\bin\s+(thousands|millions|billions)\b", re.I)  # "(In\xa0thousands, except ...)"
_HEADING_SCALE = re.compile(r"\((?:[^()]{0,40}?\b)?in\s+(thousands|millions|billions)\b[^()]{0,80}\)", re.I)
_FACTOR = {1e-3: "0.001", 1e3: "1000"}  # how a scale is written in a computation
_UNIT_FACTOR = re.compile(r"0\.0*1|10{3,}")  # a change of unit in a computation, not a value read from a page

_CAPEX = ("capital expenditures", "capital spending", "purchases of property and equipment",
          "purchases of property plant and equipment", "payments for property and equipment",
          "additions to property and equipment", "capital expenditure")
_RECEIVABLES = ("accounts receivable", "receivables", "trade accounts receivable", "trade receivables")
_INVENTORY = ("inventories", "merchandise inventories", "inventory")
_REVENUE = ("revenues", "total revenues", "net revenues", "net sales", "total net sales", "net revenue",
            "total net revenue")
_CFO = ("net cash provided by operating activities", "cash provided by operations", "net cash from operating activities",
        "cash flows from operating activities")
_PPE = ("property and equipment net", "property plant and equipment net", "property and equipment",
        "property plant and equipment")
_EQUITY = ("total stockholders equity", "total shareholders equity", "total equity", "stockholders equity",
           "shareholders equity")
# Common names of line items that filings label differently (the label words themselves also match).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "cogs": ("cost of goods sold", "cost of sales", "cost of revenue", "cost of revenues", "cost of products sold",
             "total cost of revenue", "total cost of sales"),
    "cost of goods sold": ("cost of sales", "cost of revenue", "cost of revenues", "cost of products sold"),
    "revenue": (*_REVENUE, "sales"),
    "net income": ("net earnings", "net income attributable", "net earnings attributable", "net loss"),
    "gross profit": ("gross margin",),
    "pp&e": _PPE,
    "ppne": _PPE,
    "net ppne": _PPE,
    "net pp&e": _PPE,
    "inventory": _INVENTORY,
    "inventories": _INVENTORY,
    "accounts receivable": ("accounts receivable", "receivables", "trade accounts receivable", "trade receivables"),
    "cash from operations": _CFO,
    "operating income": ("operating income", "income from operations", "operating profit", "earnings from operations",
                         "operating earnings"),
    "capex": _CAPEX,
    "capital expenditure": _CAPEX,
    "capital expenditures": _CAPEX,
    "ar": _RECEIVABLES,
    "net ar": _RECEIVABLES,
    "ap": ("accounts payable", "trade accounts payable", "trade payables"),
    "d&a": ("depreciation and amortization", "depreciation amortization", "depreciation depletion and amortization"),
    "sg&a": ("selling general and administrative", "selling general and administrative expenses"),
    "eps": ("earnings per share", "net income per share"),
    "sales": ("revenue", *_REVENUE),
    "asset": ("total assets",),
    "assets": ("total assets",),
    "total shareholders equity": _EQUITY,
    "shareholders equity": _EQUITY,
    "stockholders equity": _EQUITY,
    "stockholder equity": _EQUITY,
    "equity": _EQUITY,
    "cash balance": ("cash and cash equivalents",),
    "operating cash flow": _CFO,
    "income tax expense": ("provision for income taxes", "income tax provision", "provision for income tax",
                           "income tax expense"),
    "income before income taxes": ("earnings before income taxes", "income before provision for income taxes",
                                   "income before taxes"),
    "r&d": ("research and development",),
    "cash dividends": ("dividends paid", "cash dividends paid", "dividends paid to shareholders",
                       "dividends paid to common shareholders", "payments of dividends"),
}
# items that are amounts paid out or expenses, which a cash flow or income statement prints negative ("(4,625)")
_PAID = re.compile(r"\b(?:capex|capital expenditures?|capital spending|dividends?|purchases?|repurchases?|payments?|"
                   r"expenses?|provision|costs?|cogs)\b", re.I)
_LABEL_NOISE = {"and", "of", "the", "a", "an", "in", "for", "to", "note", "notes"}
MIN_LABEL_MATCH = 0.5  # share of a row label's words that name the item, to read that row
# a row label's qualifier: ", net", ", net of allowances", ", less accumulated depreciation", ", excluding ...",
# and what a depreciation line is of ("Depreciation and amortization of property, equipment and intangibles")
_LABEL_QUALIFIER = re.compile(r",\s*(?:net|less|excluding|including)\b.*$|\s+of\s+property\b.*$", re.I)
MAX_DEPTH = 4  # names defined through other names
# words that make a label another item than one whose name lacks them: "Total current assets", "Total
# liabilities and equity", "Cost of revenue", "Deferred revenue", "Cash, cash equivalents and short-term
# investments", "Adjusted net income", "Equity income (loss), net"
_OTHER_ITEM_WORDS = frozenset({"current", "noncurrent", "long", "short", "deferred", "equity", "asset", "liability",
                               "revenue", "income", "cost", "equivalent", "investment", "adjusted"})
# words of a row that reports a movement of an item, not the item: "(Increase) decrease in accounts
# receivable", "Purchases of short-term investments", "Net increase in cash and equivalents"
_FLOW_WORDS = frozenset({"increase", "decrease", "change", "purchase", "proceed", "sale", "repayment", "issuance",
                         "acquisition", "disposal", "effect"})


@dataclass
class Operand:
    """One line item read for the formula: where it is printed, and its value in millions."""

    item: str
    year: int
    value: float
    label: str
    printed: str  # the cell as printed ("1,174")
    page: int
    doc_id: str = ""
    match: float = 0.0
    scale: float = 1.0  # to millions: 0.001 on a page "(in thousands)"
    bbox: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # the value's cell
    label_bbox: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # its row's label
    # read elsewhere than on the statement that prints such items, though the document has that statement
    off_statement: bool = False

    @property
    def written(self) -> str:
        """The operand in a written-out computation: as printed, times its scale where that is not 1."""
        return self.printed if self.scale == 1.0 else f"({self.printed} * {_FACTOR[self.scale]})"

    def regions(self) -> list[Region]:
        """The cell and its row label, as citation regions."""
        return [Region(self.page, tuple(self.bbox), "cell", self.printed),
                Region(self.page, tuple(self.label_bbox), "row-header", self.label)]


@dataclass
class FormulaAnswer:
    value: float
    text: str  # rounded as the question asks
    shown: str  # "3.46 = 28,925 / ((8,420 + 7,367) / 2)"
    operands: list[Operand]


def definitions(question: str) -> dict[str, str]:
    """Defined name (lower case) -> its expression, in the order the question states them."""
    out: dict[str, str] = {}
    for m in _DEFINED.finditer(question):
        name = " ".join((m.group(1) or m.group(2) or "").split()).lower()
        expr = " ".join(m.group(3).split())
        if name and expr:
            out[name] = expr
    return out


def asked(question: str, defs: dict[str, str]) -> str | None:
    """The defined name the question asks for: named in the question before the definitions, with
    nothing but the entity after it ("what is Nike's FY2021 inventory turnover ratio?", "... (DPO) for
    Walmart?"), not a metric built on it ("the 3 year average EBITDA % margin", which it does not define)."""
    head = _HEAD.split(question, maxsplit=1)[0].lower()
    for name in defs:
        for m in re.finditer(rf"\b{re.escape(name)}\b", head):
            rest = head[m.end():].split("?")[0]
            rest = re.sub(r"^[\s)]*(?:\((?:[^)]*)\))?\s*", "", rest)  # "(DPO)" after the spelled-out name
            if not rest or re.match(r"(?:for|of|at|in)\b", rest):
                return name
    return None


def question_year(question: str) -> int | None:
    """The fiscal year the question asks about: the last "FYyyyy" before its first definition."""
    head = _HEAD.split(question, maxsplit=1)[0]
    years = _FY.findall(head) or _FY.findall(question)
    return int(years[-1]) if years else None


def decimals(question: str, default: int = 2) -> int:
    m = _DECIMALS.search(question)
    if not m:
        return default
    w = m.group(1).lower()
    return int(w) if w.isdigit() else ("one", "two", "three", "four").index(w) + 1


def label_words(text: str) -> set[str]:
    """A row label's words. Not :func:`trident_local.text.terms`: its stop words drop "total" and
    "other", which are what tell "Total current assets" from "Other current assets"."""
    text = re.sub(r"\([^)]*\)", " ", text)  # "(Note 6)", "(in millions)"
    return {_singular(w) for w in set(re.findall(r"[a-z&]+", text.lower())) - _LABEL_NOISE}


def _singular(word: str) -> str:
    """"inventories" and "inventory", "expenses" and "expense" name the same item ("-ss" and "-us" stay)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=16)
def _pages_by_word(store: IndexStore, doc_id: str) -> dict[str, frozenset[int]]:
    """Each :func:`label_words` word of a document's pages -> the pages that print it: read once per document
    (a doc_id is its PDF's content hash), so finding the pages that print every word of an item's name is a
    set intersection, not a read of every page's words for every item (most of a filing search's time)."""
    pages: dict[str, set[int]] = {}
    for p in store.document(doc_id).pages:
        for w in label_words(p.text):
            pages.setdefault(w, set()).add(p.number)
    return {w: frozenset(ps) for w, ps in pages.items()}


def label_match(item: str, label: str) -> float:
    """How well a row label names ``item`` (or a common name for it): 0 unless the label holds every word
    of the name ("Other current assets" does not name total current assets), else the share of the
    label's words that are the name's (a shorter label is a closer name). A qualifier after a comma
    ("Capital expenditures, net of construction payable", "Accounts receivable, net") is not part of
    the name: the share is of the words before it."""
    if label.lower().lstrip().startswith("other") and "other" not in item.lower():
        return 0.0  # "Other long-term debt" is by its name not the long-term debt
    named = _LABEL_QUALIFIER.sub("", label)
    lw, short = label_words(label), label_words(named)
    if not lw:
        return 0.0
    best = 0.0
    for name in (item, *SYNONYMS.get(item.lower(), ())):
        iw = label_words(name)
        if (lw - iw) & _FLOW_WORDS:  # "Purchases of short-term investments" is not the investments' balance
            continue
        if ((short or lw) - iw) & _OTHER_ITEM_WORDS:  # "Total current assets" is not the total assets
            continue
        if "total" in iw and iw != (short or lw):  # a total is named exactly: not "Total accrued liabilities"
            continue
        if iw and iw <= lw:
            best = max(best, len(iw) / len(lw))
        if iw and short and iw <= short:
            best = max(best, len(iw) / len(short))
    return best


def _year_heads(row_cells: Sequence[Cell]) -> list[tuple[float, int]]:
    """(x centre, year) of each year a heading row prints, left to right; a cell that prints several
    ("December 28, 2019 December 29, 2018") spreads them evenly over its width."""
    heads = []
    for c in row_cells:
        years = [int(m.group()) for m in _YEAR.finditer(c.text)]
        width = (c.bbox[2] - c.bbox[0]) / max(1, len(years))
        heads += [(c.bbox[0] + width * (k + 0.5), y) for k, y in enumerate(years)]
    return heads


def year_cell(lay: PageLayout, row_i: int, year: int) -> Cell | None:
    """The value cell of row ``row_i`` in the column headed by ``year``: the years of the nearest heading row
    above (a short row that prints years) are paired with the row's values in order, or by the nearest
    centre when their counts differ."""
    row = lay.rows[row_i]
    values = [c for c in row.cells[1:] if c.value and numbers(c.text) and "%" not in c.text]
    if not values:
        return None
    for r in reversed(lay.rows[max(0, row_i - 60):row_i]):
        heads = _year_heads(r.cells)
        words = sum(len(re.findall(r"[A-Za-z]+", c.text)) for c in r.cells)
        if not heads or words > 4 * len(heads) + 6 or (len(heads) < 2 and len(values) > 1):
            continue
        if len(heads) == len(values):
            pairs = list(zip(values, (y for _, y in heads), strict=True))
        else:
            pairs = [(v, min(heads, key=lambda h, v=v: abs(h[0] - (v.bbox[0] + v.bbox[2]) / 2))[1]) for v in values]
        return next((v for v, y in pairs if y == year), None)
    return None


def printed(text: str) -> str:
    """The number as the cell prints it, without currency or percent signs ("2,672 $" -> "2,672";
    "(1,174)" stays: a negative in a statement)."""
    found = printed_numbers(text)
    return found[0].replace("$", "").replace("%", "") if found else text.strip()


def cell_number(text: str) -> float | None:
    """A printed value as a number: "(1,174)" and "-1,174" are negative."""
    raw = printed(text)
    v = to_number(raw)
    if v is None:
        return None
    return -abs(v) if raw.startswith("(") or raw.startswith("-") else v


def row_scale(lay: PageLayout, row_i: int) -> float | None:
    """The unit of a table row: the nearest "(in thousands)" / "(Amounts in millions)" above it (a page
    can hold two tables in different units), None where nothing above it states one."""
    for r in reversed(lay.rows[:row_i]):
        if m := _SCALE.search(r.text):
            return SCALES[m.group(1).lower()]
    return None


def page_scale(page_text: str) -> float:
    """The unit the page's tables are in, to millions: the statement's heading "(In thousands, except ...)"
    / "(Amounts in millions)" where it has one (prose on the same page may say "$1.2 in billions"),
    else the first "in thousands" of the page."""
    m = _HEADING_SCALE.search(page_text) or _SCALE.search(page_text)
    return SCALES[m.group(1).lower()] if m else 1.0


# (item name, year) -> the operand, or None where no row names it
Lookup = Callable[[str, int], "Operand | None"]


Value = tuple[float, str]  # a value and how it is written out ("(8,420 + 7,367) / 2")


class _Parser:
    """+ - * / and parentheses over operand phrases; an operand is resolved as it is read."""

    def __init__(self, tokens: list[str], operand: Callable[[str], Value | None]):
        self.tokens, self.at, self.operand = tokens, 0, operand

    def parse(self) -> Value | None:
        v = self._sum()
        return v if self.at == len(self.tokens) else None

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _sum(self) -> Value | None:
        return self._level(self._product, ("+", "-"))

    def _product(self) -> Value | None:
        return self._level(self._power, ("*", "/"))

    def _power(self) -> Value | None:
        """``atom (^ atom)?``: a growth rate's root; a negative base has no real root, so no value."""
        v = self._atom()
        if v is None or self._peek() != "^":
            return v
        self.at += 1
        w = self._atom()
        if w is None or v[0] < 0 or (v[0] == 0 and w[0] <= 0):
            return None
        return v[0] ** w[0], f"{v[1]} ^ {w[1]}"

    def _level(self, operand: Callable[[], Value | None], ops: tuple[str, str]) -> Value | None:
        """``operand (op operand)*``, left to right; a division by zero is no value."""
        v = operand()
        while v is not None and self._peek() in ops:
            op = self.tokens[self.at]
            self.at += 1
            w = operand()
            if w is None or (op == "/" and w[0] == 0):
                return None
            value = {"+": v[0] + w[0], "-": v[0] - w[0], "*": v[0] * w[0]}.get(op) if op != "/" else v[0] / w[0]
            v = (value, f"{v[1]} {op} {w[1]}")
        return v

    def _atom(self) -> Value | None:
        t = self._peek()
        if t is None or t in ("+", "-", "*", "/", "^", ")"):
            return None
        self.at += 1
        if t == "(":
            v = self._sum()
            if v is None or self._peek() != ")":
                return None
            self.at += 1
            return v if " " not in v[1] else (v[0], f"({v[1]})")
        if re.fullmatch(r"\d+(?:\.\d+)?", t):
            return float(t), t
        return self.operand(t)


def tokens(expr: str) -> list[str]:
    e = expr
    for rx, op in _WORD_OPS:
        e = re.sub(rx, f" {op} ", e, flags=re.I)
    out = []
    for part in re.split(r"(\(|\)|\s[-+*/^]\s|^[-+*/^]\s|\s[-+*/^]$)", e):
        p = part.strip()
        if p:
            out.append(p)
    return out


def _grouped(v: Value | None) -> Value | None:
    """A named sub-expression's value, its written form in parentheses where it has an operator."""
    return None if v is None else (v[0], v[1] if " " not in v[1] else f"({v[1]})")


class _Evaluation:
    def __init__(self, defs: dict[str, str], year: int | None, lookup: Lookup):
        self.defs, self.year, self.lookup = defs, year, lookup
        self.operands: list[Operand] = []

    def expr(self, expr: str, depth: int = 0) -> Value | None:
        if depth > MAX_DEPTH:
            return None
        return _Parser(tokens(expr), lambda t: self.operand(t, depth)).parse()

    def operand(self, phrase: str, depth: int) -> Value | None:
        key = " ".join(phrase.lower().split())
        if key in self.defs:
            return _grouped(self.expr(self.defs[key], depth + 1))
        for rx, combine, show in ((_AVERAGE, lambda a, b: (a + b) / 2, "({a} + {b}) / 2"),
                                  (_CHANGE, lambda a, b: b - a, "({b} - {a})")):
            if m := rx.match(phrase):
                a, b = self.item(m.group(1), int(m.group(2))), self.item(m.group(1), int(m.group(3)))
                if a is None or b is None:
                    return None
                return combine(a.value, b.value), show.format(a=a.written, b=b.written)
        year = self.year
        if m := _FY.search(phrase):
            year, phrase = int(m.group(1)), " ".join(_FY.sub(" ", phrase).split())
        if phrase.lower() in self.defs and year is not None:  # "FY2019 unadjusted EBITDA", defined without a year
            outer, self.year = self.year, year
            v = self.expr(self.defs[phrase.lower()], depth + 1)
            self.year = outer
            return _grouped(v)
        if year is not None and (named := named_expression(phrase, year)) is not None:  # "FY2015 working capital"
            return _grouped(self.expr(named, depth + 1))
        if year is None:
            return None
        name = _item_name(phrase)
        op = self.read(name, year)
        if (op is None or op.off_statement) and (derived := derived_expression(name, year)):
            trial = _Evaluation(self.defs, year, self.lookup)  # from the statement's own rows, or not at all
            got = trial.expr(derived, depth + 1)
            if got is not None and trial.operands and not any(o.off_statement for o in trial.operands):
                self.operands += trial.operands
                return _grouped(got)
        if op is None:
            return None
        self.operands.append(op)
        return op.value, op.written

    def item(self, name: str, year: int) -> Operand | None:
        """The line item ``name`` of ``year``, kept as an operand of the computation."""
        op = self.read(_item_name(name), year)
        if op is not None:
            self.operands.append(op)
        return op

    def read(self, name: str, year: int) -> Operand | None:
        """The line item's row; an amount paid out that the statement prints "(4,625)" counts as 4,625."""
        op = self.lookup(name, year) if name else None
        if op is not None and (_PAID.search(name) or _PAID.search(op.label)) and op.value < 0:
            op = replace(op, value=-op.value, printed=op.printed.strip("()-"))
        return op


def _item_name(phrase: str) -> str:
    """A line item's name without where the question says to read it ("... in the income statement")."""
    return " ".join(_QUALIFIER.sub(" ", phrase).split())


def evaluate(question: str, lookup: Lookup) -> FormulaAnswer | None:
    """The metric the question defines, or else the standard metric it names (:mod:`.metric_forms`: an
    average share, a margin, a change, a growth rate), computed with ``lookup``; None where any part is
    missing. A standard metric is a percentage: its answer reads "7.9%"."""
    defs = definitions(question)
    name = asked(question, defs)
    form = metric_form(question) if name is None else None
    if name is None and form is None:
        return None
    ev = _Evaluation(defs, question_year(question), lookup)
    got = ev.expr(defs[name] if name is not None else form.expression)
    if got is None or not ev.operands:
        return None
    value, written = got
    amount = form is not None and form.unit is not None
    number = f"{value:,.{decimals(question, default=0 if amount and 'round' not in question.lower() else 2)}f}"
    text = number + ("%" if form is not None and form.percent else "")
    return FormulaAnswer(value, text, f"{number} = {written}", ev.operands)


def computes(question: str) -> bool:
    """Whether :func:`evaluate` would try ``question``: it defines a metric or names a standard one."""
    return bool(definitions(question)) or metric_form(question) is not None


def index_lookup(index: Index, doc_id: str, pages: Sequence[int], k: int = 5, prefer: Sequence[int] = (),
                 statements: dict[int, str] | None = None) -> Lookup:
    """Line items of one document: the rows of ``prefer`` (the statements the question names, see
    :mod:`.statements`) where one of them holds the item, else of the statement that prints such an item
    (``statements``: page -> kind; :func:`.statements.item_statement`: inventory on the balance sheet,
    depreciation on the cash flow statement), else of ``pages`` (the question's hits, best first) and of
    the pages a search for the item's names finds, else of the other pages that print the year and the
    words of one of its names, in order; the best-matching label wins, the earlier page on a tie. A value
    is scaled to millions by its page's "(in thousands)"."""
    from trident_local.generate.statements import item_statement
    from trident_local.regions.attach import layout_of

    doc = index.store.document(doc_id)

    def best_row(name: str, year: int, candidates: Sequence[int]) -> Operand | None:
        best: Operand | None = None
        for page in candidates:
            lay = layout_of(index, doc_id, page)
            for i, row in enumerate(lay.rows):
                label = row.cells[0].text if row.cells else ""
                if not row.is_table_row or "%" in label or "percent" in label.lower():
                    continue  # a share of something is not a line item's amount
                match = label_match(name, label)
                if match < MIN_LABEL_MATCH or (best is not None and match <= best.match):
                    continue
                cell = year_cell(lay, i, year)
                value = cell_number(cell.text) if cell is not None else None
                if cell is None or value is None:
                    continue
                scale = row_scale(lay, i) or page_scale(doc.page(page).text)
                best = Operand(name, year, value * scale, label, printed(cell.text), page, doc_id, match, scale,
                               cell.bbox, row.cells[0].bbox)
        return best

    used: list[int] = []  # pages operands were read from: a metric's items come from the same statements
    # the default pool where the index has it; an index built with BM25 alone is searched with BM25
    pool = "fused" if "dense" in index.store.config.pools else "bm25"

    def lookup(name: str, year: int) -> Operand | None:
        names = [name, *SYNONYMS.get(name.lower(), ())]
        found = index.search(" ".join(names[:3]) + f" {year}", pool=pool, doc=[doc_id], k=k)
        near = list(dict.fromkeys([*used, *pages, *(h.page for h in found)]))
        # the other pages that print the year and every word of one of the names: only those get a layout
        words = _pages_by_word(index.store, doc_id)
        holding = set().union(*(frozenset.intersection(*(words.get(w, frozenset()) for w in ws))
                                for ws in map(label_words, names) if ws))
        rest = [p.number for p in doc.pages if p.number in holding and p.number not in near and str(year) in p.text]
        kind = item_statement(name)
        home = [p for p, kd in (statements or {}).items() if kd == kind and p not in prefer]
        op = (best_row(name, year, prefer) or best_row(name, year, home) or best_row(name, year, near)
              or best_row(name, year, rest))
        if op is not None and home and op.page not in home and op.page not in prefer:
            op = replace(op, off_statement=True)
        if op is not None and op.page not in used:
            used.append(op.page)
        return op

    return lookup


def recompute(shown: str) -> bool | None:
    """Whether a written-out computation ("6.25 = 16,830 / ((2,667 + 2,721) / 2)") holds: the right side,
    recomputed, rounds to the left side; None when it is not written in that form."""
    lhs, sep, rhs = shown.partition(" = ")
    if not sep or not re.fullmatch(r"-?[\d,]+(?:\.\d+)?", lhs.strip()):
        return None
    got = _Parser(tokens(rhs.replace(",", "")), lambda _: None).parse()
    if got is None:
        return None
    places = len(lhs.split(".")[1]) if "." in lhs else 0
    return abs(round(got[0], places) - float(lhs.replace(",", ""))) < 10 ** -places / 2 + 1e-9


def operand_numbers(shown: str) -> list[str]:
    """The printed operands of a written-out computation, constants aside ("365", "2")."""
    _, _, rhs = shown.partition(" = ")
    found = re.findall(r"\d[\d,]*(?:\.\d+)?", rhs)
    return [n for n in found if ("," in n or "." in n or len(n) > 3) and not _UNIT_FACTOR.fullmatch(n)]
