"""Question shape, read from the question alone: the format gate and the synthesis rule's answer type.

The gate sends multiple-choice and short extractive questions to the plain
answer (lenses add nothing there, per the paper) and everything else to lenses.
The answer type picks the lens synthesis trusts: numeric -> entity/value view,
location -> structural view, otherwise consensus.
"""

from __future__ import annotations

import re

_CHOICES = re.compile(
    r"(\([A-Da-d]\)|\b[A-D][.)]\s|\boptions?\s*:|\bchoose\b|\bwhich of the following\b|"
    r"\bor\b[^?]*\?\s*$)",
    re.I,
)
_SHORT = re.compile(
    r"^\s*(how many|how much|what (?:year|date|time|percentage|percent|number|is the (?:name|number|"
    r"value|total|amount|title|url|email))|which year|when|who|whom|whose|what's the (?:name|number))\b",
    re.I,
)
_NUMERIC = re.compile(
    r"\b(how many|how much|percentage|percent|proportion|ratio|rate|number of|amount|total|"
    r"average|median|sum|difference|increase|decrease|growth|cost|price|revenue|value)\b",
    re.I,
)
_LOCATION = re.compile(
    r"\b(where|which (?:page|section|chapter|slide|part|figure|table)|in which (?:page|section|"
    r"chapter|slide|part)|what page|what section|located)\b",
    re.I,
)


def question_kind(question: str) -> str:
    """ "multiple-choice", "short-extractive" or "open"."""
    if _CHOICES.search(question):
        return "multiple-choice"
    if _SHORT.search(question):
        return "short-extractive"
    return "open"


def answer_type(question: str) -> str:
    """ "location", "numeric" or "other" (location first: "which page shows the revenue" is a location)."""
    if _LOCATION.search(question):
        return "location"
    if _NUMERIC.search(question):
        return "numeric"
    return "other"


def gate(question: str, requested: str) -> tuple[str, str]:
    """(mode, reason): ``requested`` is plain | lenses | auto; auto routes by question kind."""
    if requested in ("plain", "lenses"):
        return requested, f"--answer {requested}"
    kind = question_kind(question)
    if kind in ("multiple-choice", "short-extractive"):
        return "plain", f"auto: {kind} question -> plain"
    return "lenses", "auto: open question -> lenses"
