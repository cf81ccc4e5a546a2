"""When the text channel cannot decide: a claim about the page whose value is not in the page's text.

A no-model text scorer reads only the page's text. Two kinds of correct claims
never show their value there: values shown only in a figure or chart, and values
computed from numbers on the page (a difference, sum, ratio or share). Removing
such a claim on the strength of a text score deletes correct answers, so when the
page is plainly about the claim (its words are there) but the value is not, and the
page either has a figure/chart or holds two numbers that compute the value, the
verdict becomes "unknown": the repair policy keeps the citation and flags it
``unverified`` instead of removing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations
from typing import Any

from trident_local.verify.support_features import numbers

ON_TOPIC = 0.6  # idf-weighted share of the claim's words on the page for it to be "about" the claim
REL_TOL = 0.01  # a computed value matches within 1% (the benchmark's Float rule)
MAX_PAGE_NUMBERS = 60  # pairs over at most this many distinct page numbers (3,540 ordered pairs)


def _value(s: str) -> float | None:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def computed_pair(target: float, page_values: Sequence[float], tol: float | None = None
                  ) -> tuple[float, str, float] | None:
    """(a, op, b) such that ``target`` = a - b, a + b, a / b or 100 a / b ("% of") within ``tol``
    (default: 1% of the target), or None."""
    vals = list(dict.fromkeys(page_values))[:MAX_PAGE_NUMBERS]
    tol = max(abs(target) * REL_TOL, 1e-9) if tol is None else tol
    for a, b in permutations(vals, 2):
        for sym, v in (("-", a - b), ("+", a + b), ("/", a / b if b else None),
                       ("% of", 100 * a / b if b else None)):
            if v is not None and abs(v - target) <= tol:
                return a, sym, b
    return None


def computed_from(target: float, page_values: Sequence[float]) -> str | None:
    """How ``target`` follows from two page values, written out ("95.2 - 74.5"), or None."""
    pair = computed_pair(target, page_values)
    return None if pair is None else f"{pair[0]:g} {pair[1]} {pair[2]:g}"


def page_is_visual(page: Any) -> bool:
    """Whether the page shows figures or charts (or has no text layer of its own)."""
    if page is None:
        return False
    if getattr(page, "image_only", False) or getattr(page, "ocr", False):
        return True
    return any(o.type == "figure" for o in getattr(page, "objects", ()))


def cannot_decide(claim: str, page_text: str, feats: dict[str, float], page: Any = None) -> str | None:
    """Why the text channel cannot decide this (claim, page) pair, or None when it can."""
    claim_numbers = [n for n in dict.fromkeys(numbers(claim))]
    page_numbers = set(numbers(page_text))
    missing = [n for n in claim_numbers if n not in page_numbers]
    if not missing or feats.get("idf_coverage", 0.0) < ON_TOPIC:
        return None
    if page_is_visual(page):
        return f"value {missing[0]} not in the page text; the page has a figure or chart"
    target = _value(missing[0])
    if target is None:
        return None
    page_values = [v for n in numbers(page_text) if (v := _value(n)) is not None]
    how = computed_from(target, page_values)
    if how is not None:
        return f"value {missing[0]} not printed; computable from the page ({how})"
    return None
