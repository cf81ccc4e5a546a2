"""Structured model calls: strict parsing, schema validation, length cuts retried and counted."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import BaseModel, Field

from trident_local.annotate import prompts as annotate_prompts
from trident_local.annotate.model_calls import parse_page_output
from trident_local.errors import ModelOutputError
from trident_local.models import structured
from trident_local.models.protocols import ChatRequest, ChatResult, Message, SamplingParams


class Reply(BaseModel):
    pages: list[int] = Field(max_length=3)
    answer: str = Field(max_length=20)


def test_safe_repairs_are_named() -> None:
    assert structured.parse_reply('{"pages": [1], "answer": "x"}', Reply)[1] == []
    value, repairs = structured.parse_reply('Sure! ```json\n{"pages": [3, 1], "answer": "12%"}\n``` ok', Reply)
    assert value == Reply(pages=[3, 1], answer="12%") and repairs == ["fence"]
    assert structured.parse_reply('noise {"pages": [], "answer": "a"} more {"b": 2}', Reply)[1] == ["extracted"]


def test_a_nested_object_inside_truncated_json_is_not_the_answer() -> None:
    """The first engine run: a reply cut mid-way returned its inner object as if it were the reply."""
    cut = '{"entities": [{"text": "Helios", "type": "name"}, {"text": "Revenue of the Coastal'
    with pytest.raises(ModelOutputError, match="truncated"):
        structured.parse_json_text(cut)
    with pytest.raises(ModelOutputError):
        parse_page_output(cut, with_caption=False)


def test_schema_violations_are_errors_with_paths() -> None:
    with pytest.raises(ModelOutputError, match=r"\$\.pages\[1\]"):
        structured.parse_reply('{"pages": [1, "two"], "answer": "x"}', Reply)
    with pytest.raises(ModelOutputError, match=r"\$\.answer"):
        structured.parse_reply('{"pages": []}', Reply)
    for bad in ["", "no json", "{'pages': []}", '{"pages": [1,], "answer": "x"}']:
        with pytest.raises(ModelOutputError):
            structured.parse_reply(bad, Reply)


def test_the_sent_schema_bounds_the_reply() -> None:
    """Bounds reach the engine: a looping model is stopped by the grammar, not by max_tokens."""
    s = structured.json_schema(annotate_prompts.PageEntities)
    ents = s["properties"]["entities"]
    assert ents["maxItems"] == annotate_prompts.MAX_PAGE_ENTITIES == 25
    entity = s["$defs"]["PageEntity"]
    assert entity["properties"]["text"]["maxLength"] == 60
    assert entity["properties"]["type"]["enum"] == ["name", "number", "date", "money", "percent", "ref"]
    assert "caption" in structured.json_schema(annotate_prompts.page_schema(True))["required"]


def test_invalid_entity_items_are_dropped_and_counted() -> None:
    value, repairs = structured.parse_reply(
        '{"entities": [{"text": "Helios", "type": "name"}, {"text": "x", "type": "colour"}, 7]}',
        annotate_prompts.PageEntities,
    )
    assert [e.text for e in value.entities] == ["Helios"] and repairs == ["dropped-entity"]


class Scripted:
    """Replies in order; records each batch and its max_tokens (a stand-in for a chat backend)."""

    name, supports_images, supports_json_schema = "scripted", False, True

    def __init__(self, replies: list[ChatResult]):
        self.replies = list(replies)
        self.batches: list[list[ChatRequest]] = []

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        self.batches.append(list(requests))
        return [self.replies.pop(0) for _ in requests]


def req(tag: str) -> ChatRequest:
    return ChatRequest([Message("user", "q")], SamplingParams(max_tokens=64), tag=tag)


def test_call_resends_length_cut_replies_once_with_more_room_and_counts() -> None:
    ok = ChatResult('{"pages": [1], "answer": "a"}')
    cut = ChatResult('{"pages": [1], "answ', finish_reason="length")
    chat = Scripted([ok, cut, cut, ChatResult('{"pages": [2], "answer": "b"}'), cut])
    stats = structured.CallStats()
    out = structured.call(chat, [req("a"), req("b"), req("c")], Reply, stats)
    assert [len(b) for b in chat.batches] == [3, 2]  # the two cut replies, re-sent together
    assert [r.params.max_tokens for r in chat.batches[1]] == [128, 128]
    assert all(r.json_schema == structured.json_schema(Reply) for r in chat.batches[0])
    assert out[0].value == Reply(pages=[1], answer="a") and out[1].value == Reply(pages=[2], answer="b")
    assert out[2].value is None and "max_tokens=128" in (out[2].error or "")  # the budget it was cut at
    assert stats.to_dict() | {"errors": []} == {
        "requests": 3,
        "ok": 2,
        "failed": 0,
        "unparsable": 1,
        "length_cut": 2,
        "length_retried": 2,
        "fitted": 0,
        "not_fitting": 0,
        "repairs": {},
        "cuts": {},
        "errors": [],
    }


def test_call_counts_backend_errors_and_repairs() -> None:
    chat = Scripted([ChatResult("", error="HTTP 400"), ChatResult('```\n{"pages": [], "answer": "x"}\n```')])
    stats = structured.CallStats()
    out = structured.call(chat, [req("a"), req("b")], Reply, stats)
    assert out[0].value is None and out[1].repairs == ["fence"]
    assert (stats.failed, stats.ok, dict(stats.repairs)) == (1, 1, {"fence": 1})
    assert stats.errors == ["a: HTTP 400"]
