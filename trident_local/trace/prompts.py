"""The chat prompt of a trace answer: system text, the JSON schema per answer format, the evidence records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trident_local.trace.evidence import Evidence
from trident_local.trace.formats import letters

SYSTEM = ("You answer questions about scientific papers. Use only the numbered evidence records; each gives the "
          "paper, page, type and text of one table, figure caption, equation, citation context or text span. "
          'Reply with one JSON object and nothing else: {"answer": ...}.')


# Bounds of a reply: a constrained reply has a largest length, and max_tokens is sized from it.
FREE_FORM_CHARS = 500
TABLE_ROWS, TABLE_COLUMNS, CELL_CHARS = 10, 6, 40


def answer_schema(fmt: str, n_choices: int = 0) -> dict[str, Any]:
    if fmt == "multiple_choice":
        ans: dict[str, Any] = {"type": "string", "enum": letters(n_choices)}
    elif fmt == "table":
        row = {"type": "array", "items": {"type": "string", "maxLength": CELL_CHARS}, "minItems": 1,
               "maxItems": TABLE_COLUMNS}
        ans = {"type": "array", "items": row, "minItems": 2, "maxItems": TABLE_ROWS}  # a header and a row
    else:
        ans = {"type": "string", "minLength": 1, "maxLength": FREE_FORM_CHARS}
    return {"type": "object", "properties": {"answer": ans}, "required": ["answer"]}


def format_instructions(fmt: str, choices: Sequence[str]) -> str:
    if fmt == "multiple_choice":
        opts = "\n".join(f"{ltr}. {c}" for ltr, c in zip(letters(len(choices)), choices, strict=True))
        return f"Choices:\n{opts}\nAnswer with the letter of the one correct choice."
    if fmt == "table":
        return "Answer with a table: a list of rows, the header row first, every cell a string."
    return "Answer with a short phrase or number only, no explanation."


def evidence_records(evidence: Sequence[Evidence], max_chars: int = 1500) -> str:
    lines = []
    for i, e in enumerate(evidence, start=1):
        label = f" {e.label}" if e.label else ""
        lines.append(f"[{i}] paper {e.paper}, page {e.page}, {e.type}{label}: {e.content(max_chars)}")
    return "\n".join(lines)
