"""Simple computed answers: a difference, sum or ratio of two table values the question names.

"How much did Coastal revenue grow from 2022 to 2023?" names one row and two
columns; "What is the difference between Desert and Coastal revenue in 2023?"
names two rows and one column. The two cells are read from the table, the
operation is taken from the question's wording, and the computation is returned
written out ("95.2 - 74.5 = 20.7") so a reader can check it against the page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from trident_local.generate.spans import to_number
from trident_local.generate.tables import Table
from trident_local.text import terms

_OPS: list[tuple[str, re.Pattern[str]]] = [
    ("ratio", re.compile(r"\b(ratio|times (?:as|larger|more|higher|bigger)|how many times)\b", re.I)),
    ("difference", re.compile(r"\b(difference|how much (?:more|less|higher|lower|larger|smaller|did .* "
                              r"(?:grow|increase|decrease|fall|drop|rise))|increase|decrease|change|"
                              r"grow|growth in|gap)\b", re.I)),
    ("sum", re.compile(r"\b(sum|combined|in total|altogether|together)\b", re.I)),
]


@dataclass
class Computation:
    """A computed value, the operation, its operands (label, value) and the line that shows it."""

    op: str
    value: float
    operands: list[tuple[str, float]]
    shown: str
    page: int
    source: str  # the table it was read from

    @property
    def text(self) -> str:
        return format_number(self.value)


def operation(question: str) -> str | None:
    """The operation the question asks for: "difference", "sum", "ratio" or None."""
    for name, rx in _OPS:
        if rx.search(question):
            return name
    return None


def format_number(v: float) -> str:
    """Shortest faithful form: 20.700000001 -> "20.7", 3.0 -> "3"."""
    r = round(v, 4)
    return f"{r:.4f}".rstrip("0").rstrip(".") if r != int(r) else str(int(r))


def _apply(op: str, a: float, b: float) -> float | None:
    if op == "difference":
        return a - b
    if op == "sum":
        return a + b
    if op == "ratio":
        return a / b if b else None
    raise ValueError(f"unknown operation {op!r}")


def _named(question_terms: set[str], cells: Sequence[str]) -> list[int]:
    """Indices of the cells the question names (a cell named when all its terms are in the question)."""
    out = []
    for i, c in enumerate(cells):
        t = set(terms(c))
        if t and t <= question_terms:
            out.append(i)
    return out


def compute(tables: Sequence[Table], question: str) -> Computation | None:
    """The first table where the question names exactly two cells of a row or of a column, computed."""
    op = operation(question)
    if op is None:
        return None
    q = set(terms(question))
    for t in tables:
        n = len(t.header)
        rows = [r for r in t.rows if len(r) == n]
        cols = [i + 1 for i in _named(q, t.header[1:])]
        named_rows = [rows[i] for i in _named(q, [r[0] for r in rows])]
        pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
        if len(named_rows) == 1 and len(cols) == 2:  # one row, two columns: later column first
            r = named_rows[0]
            a, b = sorted(cols, key=lambda c: _order(t.header[c]), reverse=True)
            pairs.append(((f"{r[0]} {t.header[a]}", r[a]), (f"{r[0]} {t.header[b]}", r[b])))
        elif len(named_rows) == 2 and len(cols) == 1:  # two rows, one column: in the question's order
            c = cols[0]
            first, second = sorted(named_rows, key=lambda r: _position(question, r[0]))
            pairs.append(((f"{first[0]} {t.header[c]}", first[c]), (f"{second[0]} {t.header[c]}", second[c])))
        for (la, va), (lb, vb) in pairs:
            a, b = to_number(va), to_number(vb)
            if a is None or b is None:
                continue
            v = _apply(op, a, b)
            if v is None:
                continue
            if op == "difference" and v < 0 and not re.search(r"\b(decrease|fall|drop|lower|less)\b", question, re.I):
                v = -v
                (la, a), (lb, b) = (lb, b), (la, a)
            sym = {"difference": "-", "sum": "+", "ratio": "/"}[op]
            shown = f"{la} {format_number(a)} {sym} {lb} {format_number(b)} = {format_number(v)}"
            return Computation(op, v, [(la, a), (lb, b)], shown, t.page, t.title)
    return None


def _order(header: str) -> float:
    """Sort key of a column header: its year or number when it has one (later periods last)."""
    v = to_number(header)
    return v if v is not None else 0.0


def _position(question: str, label: str) -> int:
    i = question.lower().find(label.lower())
    return i if i >= 0 else len(question)
