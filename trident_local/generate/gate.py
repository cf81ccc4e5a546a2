"""The format gate: plain answer or lenses, from the question's shape (:func:`trident_local.text.question_kind`).

Multiple-choice and short extractive questions go to the plain answer (lenses add
nothing there, per the paper), everything else to lenses.
"""

from __future__ import annotations

from trident_local.text import question_kind


def gate(question: str, requested: str) -> tuple[str, str]:
    """(mode, reason): ``requested`` is plain | lenses | auto; auto routes by question kind."""
    if requested in ("plain", "lenses"):
        return requested, f"--answer {requested}"
    kind = question_kind(question)
    if kind in ("multiple-choice", "short-extractive"):
        return "plain", f"auto: {kind} question -> plain"
    return "lenses", "auto: open question -> lenses"
