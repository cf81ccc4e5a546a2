"""Typed entities by pattern rules (the no-model strategy), salience ranking, and loose matching.

Types: money, percent, date, number, ref (table/figure/section references) and
name (capitalized multi-word names and acronyms). The rules favour precision on
the things questions ask about: amounts, shares, years and named things.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from trident_local.annotate.records import Entity
from trident_local.text import STOP_WORDS

ENTITY_TYPES = ("name", "number", "date", "money", "percent", "ref")
TOP_ENTITIES = 15

_MONTHS = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
    r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_SCALE = r"(?:\s?(?:million|billion|trillion|thousand|bn|mn|[MBK])\b)?"
_RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "ref",
        re.compile(
            r"\b(?:Table|Figure|Fig\.|Chart|Exhibit|Section|Appendix|Slide)\s?[0-9]+[A-Za-z]?(?:\.[0-9]+)*\b"
        ),
    ),
    (
        "money",
        re.compile(
            r"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?" + _SCALE + r")|(?:\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|"
            r"dollars|euros|pounds)\b)|(?:\b(?:USD|EUR|GBP|US\$)\s?\d[\d,]*(?:\.\d+)?" + _SCALE + ")"
        ),
    ),
    ("percent", re.compile(r"\b\d+(?:\.\d+)?\s?(?:%|percent\b|per cent\b|pp\b)")),
    (
        "date",
        re.compile(
            r"\b(?:\d{1,2}\s"
            + _MONTHS
            + r",?\s\d{4}|"
            + _MONTHS
            + r"\s\d{1,2},?\s\d{4}|"
            + _MONTHS
            + r"\s\d{4}|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|(?:FY|Q[1-4]\s?)?(?:19|20)\d{2}"
            r"(?:\s?[-–/]\s?(?:19|20)?\d{2})?)\b"
        ),
    ),
    (
        "number",
        re.compile(
            r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w%])|(?<![\w.])\d+\.\d+(?![\w%])|"
            r"(?<![\w.,])\d{2,}(?![\w%.,])"
        ),
    ),
    (
        "name",
        re.compile(
            r"\b(?:[A-Z][a-zA-Z&'\-]+(?:\s(?:of|and|for|the|de|&)\s|\s)){1,4}[A-Z][a-zA-Z&'\-]+\b|"
            r"\b[A-Z]{2,6}s?\b|(?<=[a-z,;:]\s)[A-Z][a-z]{2,}(?:'s)?\b"
        ),
    ),
]
_NAME_STOP = {w.capitalize() for w in STOP_WORDS} | {
    "Table",
    "Figure",
    "Chart",
    "Page",
    "Section",
    "The",
    "This",
}


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(" .,;:")


def pattern_entities(text: str) -> list[Entity]:
    """All entities the rules find, in order; a span claimed by one rule is not typed again."""
    claimed: list[tuple[int, int]] = []
    found: list[tuple[int, Entity]] = []
    for type_, rx in _RULES:
        for m in rx.finditer(text):
            s, e = m.span()
            if any(s < ce and cs < e for cs, ce in claimed):
                continue
            value = _clean(m.group(0))
            if type_ == "name":
                value = re.sub(r"^(?:The|A|An|In|On|At|For|Of)\s", "", value)
            if type_ == "name" and (value in _NAME_STOP or len(value) < 2):
                continue
            if type_ == "number" and len(value.replace(",", "").split(".")[0]) < 2 and "." not in value:
                continue
            claimed.append((s, e))
            found.append((s, Entity(value, type_)))
    found.sort(key=lambda x: x[0])
    return [e for _, e in found]


def normalize(text: str) -> str:
    """Lower-case, whitespace collapsed, surrounding punctuation and thousands separators removed."""
    t = " ".join(text.lower().split()).strip(" .,;:()[]\"'")
    return re.sub(r"(?<=\d),(?=\d{3})", "", t)


def rank_entities(per_page: Sequence[Sequence[Entity]], top: int = TOP_ENTITIES) -> list[list[Entity]]:
    """Per page, the ``top`` entities by salience: count on the page x log(1 + pages / pages-with-it)."""
    df: Counter[str] = Counter()
    for ents in per_page:
        df.update({normalize(e.text) for e in ents})
    n = max(len(per_page), 1)
    out = []
    for ents in per_page:
        counts = Counter(normalize(e.text) for e in ents)
        first: dict[str, Entity] = {}
        for e in ents:
            first.setdefault(normalize(e.text), e)
        ranked = sorted(first, key=lambda k: (-counts[k] * math.log(1.0 + n / df[k]), list(first).index(k)))
        out.append([first[k] for k in ranked[:top]])
    return out


def loose_match(a: str, b: str) -> bool:
    """Loose substring match of normalized forms (either contains the other; short strings need equality)."""
    x, y = normalize(a), normalize(b)
    if not x or not y:
        return False
    if min(len(x), len(y)) < 3:
        return x == y
    return x in y or y in x


def overlap_score(query_entities: Iterable[str], members: Sequence[str]) -> float:
    """Share of a bundle's entities that loosely match some query entity (0..1)."""
    q = [e for e in query_entities if normalize(e)]
    if not q or not members:
        return 0.0
    return sum(any(loose_match(m, e) for e in q) for m in members) / len(members)
