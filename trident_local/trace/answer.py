"""A trace answer from a chat model: one call over the evidence records, the reply read strictly.

The reply is parsed as JSON ``{"answer": ...}`` and repaired only where safe (code fences, a bare value
instead of the object, a letter with its choice text, via the scorer's own readers in
:mod:`trident_local.trace.formats`); :class:`~trident_local.errors.ModelOutputError` when it stays unusable,
so that the caller can fall back to the extractive answer and say so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trident_local.errors import ModelOutputError
from trident_local.trace.evidence import Evidence
from trident_local.trace.formats import as_table, mc_letter
from trident_local.trace.prompts import SYSTEM, answer_schema, evidence_records, format_instructions

if TYPE_CHECKING:
    from trident_local.models.protocols import ChatModel, ChatRequest


def parse_model_answer(text: str, fmt: str, choices: Sequence[str]) -> tuple[Any, list[str]]:
    """(answer, repairs) from a model's reply; raises ModelOutputError when no usable answer is in it."""
    from trident_local.models.structured import parse_json_text

    repairs: list[str] = []
    try:
        value, _ = parse_json_text(text)
    except ModelOutputError:
        raw = text.strip().strip('"').strip()
        if not raw or fmt == "table" and len(as_table(raw)) < 2:
            raise
        value, repairs = {"answer": raw}, ["reply was not JSON: taken as the answer text"]
    if isinstance(value, Mapping):
        if "answer" not in value:
            raise ModelOutputError(f"model reply has no 'answer': {str(value)[:200]}")
        ans = value["answer"]
    else:
        ans = value
        repairs.append("reply was a bare value, not {'answer': ...}")
    if fmt == "multiple_choice":
        letter = mc_letter(ans, choices)
        if letter is None:
            raise ModelOutputError(f"no choice letter in model answer {str(ans)[:100]!r}")
        if letter != str(ans).strip():
            repairs.append(f"answer {str(ans)[:60]!r} read as {letter}")
        return letter, repairs
    if fmt == "table":
        rows = as_table(ans)
        if len(rows) < 2:
            raise ModelOutputError(f"model table answer has fewer than two rows: {str(ans)[:100]!r}")
        return rows, repairs
    if isinstance(ans, list | dict):
        raise ModelOutputError(f"free-form answer is not a string: {str(ans)[:100]!r}")
    return str(ans).strip(), repairs


EVIDENCE_CHAR_CUTS = (800, 400, 200)  # characters per evidence record, when the records do not fit


def answer_request(question: str, fmt: str, choices: Sequence[str], evidence: Sequence[Evidence],
                   max_chars: int = 1500) -> ChatRequest:
    """The trace answer call; ``max_tokens`` is the longest reply the format's schema admits."""
    from trident_local.models.structured import schema_request

    user = (f"Question: {question}\n{format_instructions(fmt, choices)}\n\nEvidence:\n"
            f"{evidence_records(evidence, max_chars) or '(none)'}")
    return schema_request(SYSTEM, user, answer_schema(fmt, len(choices)), "trace")


def fitted_answer_request(chat: ChatModel, question: str, fmt: str, choices: Sequence[str],
                          evidence: Sequence[Evidence]) -> ChatRequest:
    """The fullest answer call that fits the model's context: each record's text is shortened
    first, then the last (weakest) records are left out, down to one."""
    from trident_local.models.budget import budget_of, fit

    def versions() -> Iterator[tuple[str, ChatRequest]]:
        yield "", answer_request(question, fmt, choices, evidence)
        for cap in EVIDENCE_CHAR_CUTS:
            yield f"evidence to {cap} chars", answer_request(question, fmt, choices, evidence, cap)
        for n in range(len(evidence) - 1, 0, -1):
            yield f"evidence records to {n}", answer_request(question, fmt, choices, evidence[:n],
                                                             EVIDENCE_CHAR_CUTS[-1])

    return fit(budget_of(chat), versions())[0]


def model_answer(chat: ChatModel, question: str, fmt: str, choices: Sequence[str],
                 evidence: Sequence[Evidence]) -> tuple[Any, list[str]]:
    req = fitted_answer_request(chat, question, fmt, choices, evidence)
    res = chat.chat([req])[0]
    if res.error:
        raise ModelOutputError(f"model call failed: {res.error}")
    return parse_model_answer(res.text, fmt, choices)
