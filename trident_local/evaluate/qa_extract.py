"""Short-answer extraction before scoring (step 1 of the MMLongBench-Doc protocol), with a local model.

The official pipeline asks GPT-4o to pull a short answer and its format out of
the free-form reply; we ask the local chat model with our own prompt of the same
shape. That is a protocol change, reported with every QA result. Without a
chat model (the CPU default) the extractive answer is already short and is
scored as is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trident_local.errors import ModelOutputError
from trident_local.generate.records import is_not_answerable
from trident_local.models.protocols import ChatModel, ChatRequest
from trident_local.models.structured import parse_json_text, schema_request

NOT_ANSWERABLE = "Not answerable"
FORMATS = ("Integer", "Float", "String", "List", "None")

SYSTEM = (
    "You turn a free-form answer to a question into the short answer a grader compares with the reference. "
    "Formats: Integer (digits only), Float (a number, no units), String (a short phrase), List (a "
    "Python-style "
    f'list of strings, e.g. ["a", "b"]). If the reply says the document does not answer the question, the '
    f'answer is "{NOT_ANSWERABLE}" with format None. Reply with JSON {{"answer": ..., "format": ...}} only.'
)
SCHEMA = {
    "type": "object",
    "properties": {
        # bounded (numbers go as strings: a JSON number has no largest length in a grammar), so a
        # constrained reply has a largest length and max_tokens is sized from it
        "answer": {"type": ["string", "array"], "minLength": 1, "maxLength": 300, "minItems": 1, "maxItems": 10,
                   "items": {"type": "string", "minLength": 1, "maxLength": 100}},
        "format": {"type": "string", "enum": list(FORMATS)},
    },
    "required": ["answer", "format"],
}

PROTOCOL_MODEL = (
    "short answers extracted by the local chat model with our prompt (official: GPT-4o "
    "few-shot); an unusable extractor reply scores the raw answer"
)
PROTOCOL_AS_IS = "no chat model: the extractive answer is scored as is (official: GPT-4o extraction first)"


@dataclass
class Extraction:
    answer: str
    format: str
    source: str  # "model", "as-is", or "as-is (extractor output unusable)"


def _to_text(value: object) -> str:
    if isinstance(value, list):
        return repr([str(v) for v in value])
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def extraction_request(question: str, reply: str) -> ChatRequest:
    return schema_request(SYSTEM, f"Question: {question}\nReply: {reply}", SCHEMA, "qa-extract")


def parse_extraction(text: str) -> Extraction:
    value, _ = parse_json_text(text)
    if not isinstance(value, dict) or "answer" not in value:
        raise ModelOutputError("no answer key")
    fmt = value.get("format") if value.get("format") in FORMATS else "String"
    ans = _to_text(value["answer"])
    if not ans:
        raise ModelOutputError("empty answer")
    return Extraction(NOT_ANSWERABLE if fmt == "None" else ans, fmt, "model")


_GROUPED_NUMBER = re.compile(r"[-$]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?")


def as_is(reply: str) -> str:
    """The no-model answer as scored: "Not answerable" for an abstention in any wording, and a lone number
    without thousands separators ("1,358,000" -> "1358000"), as the official extraction's format rule asks
    ("Integer (digits only), Float (a number, no units)"); anything else unchanged."""
    if is_not_answerable(reply):
        return NOT_ANSWERABLE
    text = reply.strip()
    return text.replace(",", "") if _GROUPED_NUMBER.fullmatch(text) else reply


def extract(chat: ChatModel | None, question: str, reply: str) -> Extraction:
    """The short answer to score; the reply itself when there is no model or its output is unusable."""
    if chat is None:
        return Extraction(as_is(reply), "", "as-is")
    res = chat.chat([extraction_request(question, reply)])[0]
    if res.error:
        return Extraction(reply, "", "as-is (extractor call failed)")
    try:
        return parse_extraction(res.text)
    except ModelOutputError:
        return Extraction(reply, "", "as-is (extractor output unusable)")
