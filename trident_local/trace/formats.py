"""Answer formats of LitTraceQA, shared by the answerer and the scorer: what a format is, how a multiple-choice
letter and a table are read from an answer, and the text normal form answers are compared in.

The answerer (:mod:`trident_local.trace.answer`) reads a model's reply with the same rules the scorer
(:mod:`trident_local.evaluate.trace_metrics`) grades it with, so a reply the scorer would accept is never
rejected as unusable.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

FORMATS = ("free_form", "multiple_choice", "table")


def normalize_text(s: Any) -> str:
    """Lower case, NFKC, punctuation and the articles a/an/the removed, spaces collapsed."""
    s = unicodedata.normalize("NFKC", str(s)).lower()
    s = s.replace("−", "-").replace("–", "-")
    s = "".join(" " if unicodedata.category(c).startswith("P") else c for c in s)
    return " ".join(w for w in s.split() if w not in ("a", "an", "the"))


def letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def mc_letter(pred: Any, choices: Sequence[str] = ()) -> str | None:
    """The letter a multiple-choice prediction picks: "B", "(B)", "B. text", "Answer: B", or a choice's text."""
    if pred is None:
        return None
    s = str(pred).strip()
    valid = set(letters(len(choices))) if choices else set(letters(26))
    m = re.match(r"^\(?([A-Za-z])\)?[.:]?$|^\(?([A-Z])[.):]\s|^\(([A-Za-z])\)\s", s)
    if m and (m.group(1) or m.group(2) or m.group(3)).upper() in valid:
        return (m.group(1) or m.group(2) or m.group(3)).upper()
    m = re.search(r"\b(?:answer|option|choice)\s*(?:is|:)?\s*\(?([A-Z])\)?(?![A-Za-z])", s, re.I)
    if m and m.group(1).upper() in valid:
        return m.group(1).upper()
    ns = normalize_text(s)
    for letter, c in zip(letters(len(choices)), choices, strict=False):
        if ns and ns == normalize_text(c):
            return letter
    return None


def as_table(value: Any) -> list[list[str]]:
    """A table answer as a list of rows of strings; a string is read as rows of ``|``-separated cells."""
    if value is None:
        return []
    if isinstance(value, str):
        lines = [ln for ln in value.strip().splitlines() if ln.strip() and not re.fullmatch(r"[\s|:+-]+", ln)]
        return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    if isinstance(value, Sequence):
        rows = []
        for r in value:
            if isinstance(r, str):
                rows.append([c.strip() for c in r.strip().strip("|").split("|")])
            elif isinstance(r, Sequence):
                rows.append(["" if c is None else str(c) for c in r])
        return rows
    return []
