"""Typed answer spans: the kind of value a question asks for, and the spans of that kind in a passage.

A question such as "How many megawatts ..." expects a count, "What percentage ..."
a percentage, "Who ..." a name. A passage is searched for spans of that kind
(number with its unit, percentage, money, date or year, name), and the one whose
clause (between semicolons, bullets and sentence ends) names the most of the
question's words is taken; among those, the one nearest to where the question's
words occur: a value usually follows what it measures ("curtailment fell to 2.3%"),
so a span before an anchor counts as three times as far as one after it. Scale words ("in millions", "million
dollars") are read from the passage so that an answer can carry its unit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from trident_local.text import pattern_entities

KINDS = ("citation", "ref", "percent", "money", "count", "year", "date", "number", "name", "text")

_EXPECT: list[tuple[str, re.Pattern[str]]] = [
    ("citation", re.compile(r"\b(which|what) (reference|paper|work|citation|source|publication)s?\b.*\bcited\b|"
                            r"\bwhich (reference|citation)\b", re.I)),
    ("ref", re.compile(r"\b(which|what) (figure|table|chart|equation|section|appendix)\b", re.I)),
    ("percent", re.compile(r"\b(percentage|percent|share of|proportion)\b", re.I)),
    ("year", re.compile(r"\b(what year|which year|in what year)\b", re.I)),
    ("date", re.compile(r"\b(what date|which date|when (?:did|was|were|is|will))\b", re.I)),
    ("count", re.compile(r"\b(how many|number of|count)\b", re.I)),
    (
        "money",
        re.compile(r"\b(how much money|cost|price|revenue|income|spend|spent|paid|salary|budget|dollars?|usd)\b",
                   re.I),
    ),
    (
        "number",
        re.compile(r"\b(how much|how long|how old|how large|ratio|rate|average|median|score|value|what is the "
                   r"(?:mrr|f1|accuracy|recall|precision))\b", re.I),
    ),
    ("name", re.compile(r"^\s*(who|whom|whose|which (?:company|person|author|organi[sz]ation|country|city))\b|"
                        r"\bwhat is the name\b|\bname of\b", re.I)),
]
_COUNT = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w%])|(?<![\w.,])\d{1,6}(?![\w.,%])")
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w%])|(?<![\w.])-?\d+(?:\.\d+)?(?![\w%])")
_ENTRY = re.compile(r"^\s*\[\d+\]\s+\S")
_CITE = re.compile(r"\[\d+(?:\s*[,–-]\s*\d+)*\]|[A-Z][A-Za-z'-]+(?: et al\.?| and [A-Z][A-Za-z'-]+)?,? \(?(?:19|20)\d{2}\)?")
_YEAR = re.compile(r"(?<![\w.])(?:19|20)\d{2}(?![\w.%])")
_UNIT_AFTER = re.compile(
    r"^\s?(%|percent|per cent|million|billion|thousand|bn|mn|m\b|k\b|megawatt-hours?|megawatts?|mw\b|gw\b|kwh|"
    r"dollars?|usd|eur|euros?|pounds?|people|persons|employees|users|pages|years?|months?|days?|hours?|"
    r"questions?|documents?|[a-z]{2,}s\b)",
    re.I,
)
# Where a clause ends: a semicolon, a bullet or a sentence end. Not a contrast ("X say ..., while 49% cite
# Y"): its first clause carries the sentence's frame, so it would hold more of the question's words.
_CLAUSE_END = re.compile(r"[;\u2022\uf0b7]|(?<=[.!?])\s+")
_SCALE = re.compile(r"\b(?:in\s+)?(thousands?|millions?|billions?)\b(?:\s+(?:of\s+)?(dollars|usd|euros?|rmb|yuan))?",
                    re.I)


@dataclass(frozen=True)
class Span:
    """A typed span of a passage: its text, kind, where it starts, its numeric value and unit when it has them."""

    text: str
    kind: str
    start: int
    value: float | None = None
    unit: str = ""


def expected_kind(question: str) -> str:
    """The kind of value the question asks for (one of KINDS), read from its wording alone."""
    for name, rx in _EXPECT:
        if rx.search(question):
            return name
    return "text"


def to_number(text: str) -> float | None:
    """The numeric value of a span ("1,280" -> 1280.0, "8.7%" -> 8.7, "$3.5" -> 3.5); None if not numeric."""
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text)
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


def scale_words(text: str) -> str:
    """The scale a passage states for its numbers ("million dollars", "billions"), "" when none."""
    m = _SCALE.search(text)
    if not m:
        return ""
    return " ".join(x for x in (m.group(1).lower(), (m.group(2) or "").lower()) if x)


def _unit_after(text: str, end: int) -> str:
    m = _UNIT_AFTER.match(text[end:end + 24])
    return m.group(1) if m else ""


def find_spans(text: str, kind: str) -> list[Span]:
    """Every span of ``kind`` in ``text``, in order."""
    out: list[Span] = []
    if kind in ("count", "number"):
        rx = _COUNT if kind == "count" else _NUMBER
        for m in rx.finditer(text):
            if _YEAR.fullmatch(m.group(0)):
                continue  # a year is not a count or an amount
            out.append(Span(m.group(0), kind, m.start(), to_number(m.group(0)), _unit_after(text, m.end())))
        if kind == "number":  # percentages and amounts are numbers too
            out += [s for k in ("percent", "money") for s in find_spans(text, k)]
            out.sort(key=lambda s: s.start)
        return out
    if kind == "citation":  # a reference-list entry as a whole, else the in-text markers
        if m := _ENTRY.match(text):
            return [Span(text.strip(), kind, m.start())]
        return [Span(m.group(0), kind, m.start()) for m in _CITE.finditer(text)]
    if kind == "year":
        return [Span(m.group(0), kind, m.start(), float(m.group(0))) for m in _YEAR.finditer(text)]
    wanted = {"ref": ("ref",), "percent": ("percent",), "money": ("money", "number"), "date": ("date",), "name": ("name",)}.get(kind)
    if wanted is None:
        return []
    pos = 0
    for e in pattern_entities(text):
        if e.type not in wanted:
            continue
        start = text.find(e.text, pos)
        if start < 0:
            start = text.find(e.text)
        pos = max(pos, start)
        if kind == "money" and e.type == "number" and _YEAR.fullmatch(e.text):
            continue
        unit = _unit_after(text, start + len(e.text)) if start >= 0 else ""
        out.append(Span(e.text, kind, max(start, 0), to_number(e.text) if kind not in ("name", "ref") else None, unit))
    return out


def assigned_value(text: str, symbol: str) -> Span | None:
    """The number assigned to a one-letter symbol in the text ("... and k = 60 as in ..." -> 60)."""
    m = re.search(rf"(?<![\w(]){re.escape(symbol)}\s*=\s*(-?\d[\d,]*(?:\.\d+)?)", text)
    if not m:
        return None
    return Span(m.group(1), "number", m.start(1), to_number(m.group(1)))


def nearest_span(text: str, anchors: Sequence[str], kind: str, exclude: Sequence[str] = ()) -> Span | None:
    """The span of ``kind`` whose clause holds the most of the ``anchors`` (lower-case words or stems),
    the one nearest to where they occur breaking ties.

    A passage often lists several values, each in its own clause ("filled 37% of new corporate positions
    with ...; filled 25% of new field positions with female employees"): the clause that names what the
    question asks about is the one to read. Spans whose text is in ``exclude`` (words of the question
    itself, e.g. its years or names) are skipped.
    """
    low_ex = {e.lower() for e in exclude}
    spans = [s for s in find_spans(text, kind) if s.text.lower() not in low_ex]
    if not spans:
        return None
    low = text.lower()
    found = [(i, i + len(a)) for a in anchors if a and (i := low.find(a)) >= 0] or [(0, 0)]
    seps = [(m.start(), m.end()) for m in _CLAUSE_END.finditer(text)]

    def named(s: Span) -> int:
        lo = max((e for _, e in seps if e <= s.start), default=0)
        hi = min((b for b, _ in seps if b >= s.start + len(s.text)), default=len(text))
        clause = low[lo:hi]
        return sum(1 for a in set(anchors) if a and re.search(rf"(?<!\w){re.escape(a)}", clause))

    def distance(s: Span) -> float:
        return min(s.start - end if s.start >= end else 3 * max(0, a_start - (s.start + len(s.text)))
                   for a_start, end in found)

    return min(spans, key=lambda s: (-named(s), distance(s)))


_HOW_MANY = re.compile(r"\bhow many\s+(?:more\s+|of\s+the\s+|different\s+|distinct\s+|total\s+)?([A-Za-z][\w-]*)",
                       re.I)
_COUNT_BEFORE = re.compile(r"(?<![\w.,$])(\d{1,3}(?:,\d{3})+|\d+)(?![\w.,%])((?:\s+[A-Za-z][\w-]*){0,3})")


def counted_noun(question: str) -> str:
    """The stem of the word a "how many" question counts ("How many square miles ..." -> "squar"), or ""."""
    from trident_local.text import stem

    m = _HOW_MANY.search(question)
    if not m or m.group(1).lower() in ("of", "times", "more", "in", "are", "is", "were", "was", "do", "does"):
        return ""
    return stem(m.group(1).lower())


def count_of(text: str, noun: str, exclude: Sequence[str] = ()) -> Span | None:
    """The first number in ``text`` that the counted noun follows within three words ("815 membership
    warehouses" for "membership"), skipping years and the question's own numbers."""
    from trident_local.text import stem

    if not noun:
        return None
    for m in _COUNT_BEFORE.finditer(text):
        if m.group(1) in exclude or _YEAR.fullmatch(m.group(1)):
            continue
        if noun in (stem(w.lower()) for w in m.group(2).split()):
            return Span(m.group(1), "count", m.start(1), to_number(m.group(1)))
    return None
