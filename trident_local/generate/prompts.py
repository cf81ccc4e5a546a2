"""Prompts of answer generation: plain, the three lenses, and synthesis.

Our wording, the paper's structure: every call sees the selected pages (images
for a VLM, text for a text-only model) and the question; each lens reads the
same pages for one kind of evidence; synthesis sees only the lens answers and
applies format-aware rules. Fixed instructions first, then the question, then
page content (prefix caching).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, ValidationInfo, field_validator

NOT_ANSWERABLE = "Not answerable"

MAX_ANSWER_CHARS = 1000


class AnswerReply(BaseModel):
    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)

    @field_validator("answer", mode="before")
    @classmethod
    def _list_as_text(cls, v: Any, info: ValidationInfo) -> Any:
        """A list answer (several values) is kept as its text; a counted repair."""
        if isinstance(v, list):
            if isinstance(info.context, dict):
                info.context.setdefault("repairs", []).append("list-answer")
            return str(v)[:MAX_ANSWER_CHARS]
        return v


ANSWER_SCHEMA: dict[str, Any] = AnswerReply.model_json_schema()

PLAIN_SYSTEM = (
    "You answer questions about a document from the pages you are shown. Answer concisely: a number, a "
    "name, a "
    "short phrase, a list, or one or two sentences when the question asks for an explanation. If the pages "
    "do not "
    f'contain the answer, the answer is "{NOT_ANSWERABLE}". Reply with JSON {{"answer": "..."}} only.'
)

LENSES: dict[str, str] = {
    "topical": (
        "Read the pages for what they say about the question's subject as a whole: the claims, findings and "
        "explanations in the running text, and how they fit together."
    ),
    "entity": (
        "Read the pages for exact values: names, numbers, dates, amounts, percentages, table cells, chart "
        "labels and "
        "data points. Copy values as printed, with their units; compute only when the question asks for it."
    ),
    "structural": (
        "Read the pages for where things are: sections and headings, page positions, which figure or table "
        "shows "
        "what, captions, legends and layout. Use the document's own labels."
    ),
}

SYNTHESIS_SYSTEM = (
    "You merge three readings of the same pages into one final answer. Rules: if the question asks for a "
    "number, "
    "amount, count or percentage, prefer the entity/value reading; if it asks where something is (page, "
    "section, "
    "figure, table), prefer the structural reading; otherwise take the answer the readings agree on, or "
    "the best "
    f'supported one. Answer "{NOT_ANSWERABLE}" only if ALL readings say so. Keep the answer as short as the '
    'readings allow. Reply with JSON {"answer": "..."} only.'
)


def lens_system(lens: str) -> str:
    return PLAIN_SYSTEM + " " + LENSES[lens]


def synthesis_user(question: str, lens_answers: dict[str, str], answer_type: str) -> str:
    lines = [f"Question: {question}", f"Question type: {answer_type}"]
    lines += [f"{name} reading: {text}" for name, text in lens_answers.items()]
    return "\n".join(lines)
