"""OpenAI request fields that change what a completion is: ``response_format``, tools, usage in a stream.

Nothing is dropped silently: a field the service cannot honour is a 400 that names it (OpenAI's
``param``), so a client that relies on it fails loudly instead of parsing plain text.

* ``response_format: {"type": "json_object"}``: the message content is a JSON object with the
  answer, its citations (with their regions) and the confidence;
* ``{"type": "json_schema", ...}``: the answer and its evidence are put into the client's schema by
  the index's chat model with guided decoding; without a chat model that can, a 400;
* ``tools`` / ``functions`` (and a ``tool_choice`` / ``function_call`` that asks for a call): a 400.
"""

from __future__ import annotations

import json
from typing import Any

from trident_local.errors import TridentError

SCHEMA_MAX_TOKENS = 1024  # the reply's bound when the request sets no max_tokens
SCHEMA_SYSTEM = ("Fill the JSON schema from the answer and the evidence below. Use only what they say; "
                 "leave a field empty when they do not give it.")


class BadParam(TridentError):
    """A 400 that names the request field at fault (OpenAI's ``param``)."""

    def __init__(self, message: str, param: str, code: str | None = None):
        super().__init__(message)
        self.param, self.code = param, code


def check_unsupported(tools: Any, tool_choice: Any, functions: Any, function_call: Any) -> None:
    """400 for tool calling: the service answers from documents and calls no tools."""
    if tools:
        raise BadParam("tools are not supported: the answer comes from the indexed documents", "tools")
    if functions:
        raise BadParam("functions are not supported: the answer comes from the indexed documents", "functions")
    if tool_choice not in (None, "none", "auto"):
        raise BadParam("tool_choice asks for a tool call; this server calls no tools", "tool_choice")
    if function_call not in (None, "none", "auto"):
        raise BadParam("function_call asks for a function call; this server calls no functions", "function_call")


def format_kind(response_format: dict[str, Any] | None) -> str:
    """``text``, ``json_object`` or ``json_schema``; a 400 for anything else."""
    kind = (response_format or {}).get("type", "text")
    if kind not in ("text", "json_object", "json_schema"):
        raise BadParam(f"response_format type {kind!r} is not supported (text, json_object, json_schema)",
                       "response_format")
    if kind == "json_schema":
        schema = ((response_format or {}).get("json_schema") or {}).get("schema")
        if not isinstance(schema, dict):
            raise BadParam("response_format json_schema needs json_schema.schema (a JSON schema object)",
                           "response_format")
    return kind


def json_answer(text: str, cites: list[dict[str, Any]], out: dict[str, Any]) -> str:
    """The ``json_object`` content: the answer, its citations with regions, the confidence."""
    a = out["answer"]
    return json.dumps({"answer": text, "citations": cites, "confidence": a.get("confidence"),
                       "mode": a.get("mode")}, ensure_ascii=False)


def schema_of(response_format: dict[str, Any]) -> dict[str, Any]:
    return response_format["json_schema"]["schema"]


def schema_answer(chat: Any, schema: dict[str, Any], question: str, text: str, cites: list[dict[str, Any]],
                  max_tokens: int | None = None) -> str:
    """The answer put into ``schema`` by ``chat`` with guided decoding (constrained to the schema); a
    client's schema need not bound its strings, so the reply is bounded by ``max_tokens`` instead."""
    max_tokens = max_tokens or SCHEMA_MAX_TOKENS
    from trident_local.models.protocols import ChatRequest, Message, SamplingParams

    evidence = [{"n": c["n"], "file_name": c["file_name"], "page": c["page"],
                 "text": " | ".join(r["text"] for r in c["regions"])[:2000]} for c in cites]
    user = json.dumps({"question": question, "answer": text, "evidence": evidence}, ensure_ascii=False)
    request = ChatRequest([Message("system", SCHEMA_SYSTEM), Message("user", user)],
                          params=SamplingParams(max_tokens=max_tokens), json_schema=schema, tag="response_format")
    (res,) = chat.chat([request])
    if res.error:
        raise TridentError(f"the chat model could not fill the schema: {res.error}")
    return res.text
