"""Lexical evidence that a page states a claim: numbers, dates, entities, content words.

Pure functions over strings, used by the no-model support scorer
(:mod:`trident_local.verify.judge_text`). Nothing here calls a model.

- Numbers: digit groups ("5,100", "12.50", "49%") normalised ("5100", "12.5",
  "49"); number words zero..twenty and the tens are numbers too ("three" = "3").
  Years and the day of a date are numbers, so dates are covered here.
- Entities: capitalised or all-caps words and words mixing letters and digits
  ("LinkedIn", "HOVER", "GPT-4"), compared case-insensitively.
- Content words: lower-cased words minus stop words (question words included),
  Snowball-stemmed; coverage is also weighted by each word's rarity across the
  pages of the same document (a word on every page says little about any one).
- Verbatim clauses: a clause of the claim (between dashes, commas, semicolons,
  colons, parentheses) found word for word on the page.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from trident_local.text import CLAIM_STOP_WORDS, content_terms, tokens

_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen twenty")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_SMALL.split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
                      "eighty": "80", "ninety": "90", "hundred": "100"})

_NUM_RE = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\d])")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9']*|\d+[A-Za-z][A-Za-z0-9]*")
_CLAUSE_RE = re.compile(r"\s*[—–]\s*|\s+-{1,2}\s+|[;()?]|[,:](?=\s|$)")


def normalise_number(integer: str, decimals: str | None = None) -> str:
    """Canonical text of a number: no thousands separators, no leading or trailing zeros."""
    digits = integer.replace(",", "")
    try:
        value = Decimal(digits + ("." + decimals if decimals else ""))
    except InvalidOperation:
        return digits
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


_LOCATOR = re.compile(r"(?:\bpages?|\bslides?|\bpp?\.)\s*$", re.I)


def numbers(text: str) -> list[str]:
    """The numbers in ``text`` (digits and number words), normalised, in order, with repeats.

    Page and slide references ("on page 14", "slide 3") are locations, not facts, and are left out.
    """
    out = [normalise_number(m.group(1), m.group(2)) for m in _NUM_RE.finditer(text)
           if not _LOCATOR.search(text[max(0, m.start() - 8) : m.start()])]
    out += [_NUMBER_WORDS[w] for w in tokens(text) if w in _NUMBER_WORDS]
    return out


def entities(text: str) -> list[str]:
    """Capitalised, all-caps and letter+digit words (lower-cased), stop words left out."""
    out = []
    for w in _WORD_RE.findall(text):
        lw = w.lower().strip("'")
        if lw in CLAIM_STOP_WORDS or lw in _NUMBER_WORDS or len(lw) < 2:
            continue
        if w[0].isupper() or any(c.isdigit() for c in w):
            out.append(lw)
    return list(dict.fromkeys(out))


def clauses(text: str) -> list[str]:
    """Pieces of a claim between dashes, commas, semicolons, colons and parentheses (at least 1)."""
    parts = [p.strip() for p in _CLAUSE_RE.split(text) if p and p.strip()]
    return parts or [text]


@dataclass
class PageTerms:
    """What the lexical features need of a page, computed once per page."""

    numbers: frozenset[str]
    words: frozenset[str]  # lower-cased raw tokens (for entities)
    terms: frozenset[str]  # stemmed content words
    flat: str = " "  # the page's lower-cased tokens joined by single spaces (for verbatim phrases)

    @classmethod
    def of(cls, text: str) -> PageTerms:
        toks = tokens(text)
        return cls(frozenset(numbers(text)), frozenset(toks), frozenset(content_terms(text)),
                   " " + " ".join(toks) + " ")


def verbatim(phrase: str, page: PageTerms) -> bool:
    """Does ``phrase`` occur on the page word for word (case, punctuation and spacing ignored)?"""
    toks = tokens(phrase)
    return bool(toks) and f" {' '.join(toks)} " in page.flat


def idf(term_sets: Iterable[frozenset[str]]) -> dict[str, float]:
    """Within-document inverse page frequency: log((N + 1) / (df + 0.5)), N = pages."""
    sets = list(term_sets)
    df: dict[str, int] = {}
    for s in sets:
        for t in s:
            df[t] = df.get(t, 0) + 1
    n = len(sets)
    return {t: math.log((n + 1) / (d + 0.5)) for t, d in df.items()}


FEATURES: tuple[str, ...] = (
    "has_numbers",  # the claim has at least one number
    "numbers_found",  # fraction of the claim's distinct numbers on the page (1 when it has none)
    "numbers_missing",  # how many of its distinct numbers are not on the page (capped at 3)
    "entities_found",  # fraction of the claim's entity words on the page (1 when it has none)
    "coverage",  # fraction of the claim's content words on the page
    "idf_coverage",  # the same, weighted by within-document rarity
    "min_clause_coverage",  # the worst-covered clause of the claim
    "clauses_verbatim",  # fraction of the claim's clauses found word for word on the page
    "any_clause_verbatim",  # at least one clause is found word for word
    "similarity",  # best cosine between the claim and a window of the page (sentence embedder)
)


def lexical_features(claim: str, page: PageTerms, doc_idf: dict[str, float] | None = None) -> dict[str, float]:
    """All features of FEATURES except ``similarity``."""
    nums = list(dict.fromkeys(numbers(claim)))
    found = sum(1 for n in nums if n in page.numbers)
    ents = entities(claim)
    ent_found = sum(1 for e in ents if all(part in page.words for part in tokens(e)))
    terms = content_terms(claim)
    cov = sum(1 for t in terms if t in page.terms) / len(terms) if terms else 1.0
    if terms:
        default = max(doc_idf.values()) if doc_idf else 1.0
        w = [(doc_idf or {}).get(t, default) if doc_idf else 1.0 for t in terms]
        idf_cov = sum(wi for wi, t in zip(w, terms, strict=True) if t in page.terms) / (sum(w) or 1.0)
    else:
        idf_cov = 1.0
    clause_covs = []
    parts = clauses(claim)
    found_verbatim = [verbatim(c, page) for c in parts]
    for c in parts:
        ct = content_terms(c)
        cn = list(dict.fromkeys(numbers(c)))
        units = len(ct) + len(cn)
        if units:
            hit = sum(1 for t in ct if t in page.terms) + sum(1 for n in cn if n in page.numbers)
            clause_covs.append(hit / units)
    return {
        "has_numbers": 1.0 if nums else 0.0,
        "numbers_found": found / len(nums) if nums else 1.0,
        "numbers_missing": float(min(3, len(nums) - found)),
        "entities_found": ent_found / len(ents) if ents else 1.0,
        "coverage": cov,
        "idf_coverage": idf_cov,
        "min_clause_coverage": min(clause_covs) if clause_covs else 1.0,
        "clauses_verbatim": sum(found_verbatim) / len(found_verbatim),
        "any_clause_verbatim": 1.0 if any(found_verbatim) else 0.0,
    }
