"""The LLM reranker's reply is untrusted: repair what is safe, fall back to pool order otherwise."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from tiny_models import tiny_chat_profile

from trident_local.annotate import annotation_stage
from trident_local.errors import ModelOutputError
from trident_local.index import Index
from trident_local.models.profiles import build_model
from trident_local.models.protocols import ChatRequest, ChatResult
from trident_local.rerank import model_rerank as mr
from trident_local.rerank import rerank_pool
from trident_local.rerank.model_rerank import parse_page_list

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
POOL = ["p3", "p7", "p12", "p1"]


class ScriptedChat:
    name = "scripted"
    supports_images = False
    supports_json_schema = True

    def __init__(self, text: str | None):
        self.text = text
        self.requests: list[ChatRequest] = []

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        self.requests += requests
        return [
            ChatResult("", error="server down") if self.text is None else ChatResult(self.text)
            for _ in requests
        ]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    ix = Index.create(tmp_path_factory.mktemp("idx") / "ix")
    ix.doc_stages.append(annotation_stage(ix))
    ix.add([SAMPLES], workers=1)
    return ix


def test_valid_reply() -> None:
    p = parse_page_list('{"thinking": "table on p12", "page_list": ["p12", "p3"]}', POOL, 5)
    assert p.ids == ["p12", "p3"] and p.thinking == "table on p12" and not p.dropped


def test_unknown_ids_dropped_duplicates_removed_long_lists_cut() -> None:
    reply = '{"thinking": "", "page_list": ["p12", "p99", "p12", "p3", "p7", "p1", 12, "page 7", "x"]}'
    p = parse_page_list(reply, POOL, 3)
    assert p.ids == ["p12", "p3", "p7"]
    assert p.dropped == ["p99", "x"] and p.duplicates == 3 and p.truncated == 1  # "p12", 12, "page 7"


def test_bare_numbers_and_fenced_json_and_bare_list() -> None:
    assert parse_page_list('```json\n{"page_list": [7, "12"]}\n```', POOL, 5).ids == ["p7", "p12"]
    assert parse_page_list('Sure! ["p1"]', POOL, 5).ids == ["p1"]
    multi = ["abcd1234:p2", "ffff0000:p2", "ffff0000:p5"]
    assert parse_page_list('{"page_list": [5, 2]}', multi, 5).ids == ["ffff0000:p5"]  # "2" is ambiguous


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I think page 3.",
        '{"thinking": "x"}',
        '{"page_list": "p3"}',
        '{"page_list": ["p99", true, null]}',
        '{"page_list": [',
        "[]",
    ],
)
def test_unusable_replies_raise(reply: str) -> None:
    with pytest.raises(ModelOutputError):
        parse_page_list(reply, POOL, 5)


def test_rerank_pool_with_a_model(index: Index) -> None:
    q = "What was the revenue of the Coastal region in 2023?"
    hits = index.search(q, pool="bm25", doc="helios_annual_report_2023.pdf", k=20)
    chat = ScriptedChat(json.dumps({"thinking": "Table 1", "page_list": ["p2", "p9", "p2"]}))
    res = rerank_pool(index, q, hits, chat=chat, fields="caption-only")
    assert [h.page for h in res.hits] == [2] and res.mode == "model:scripted"
    assert res.dropped_ids == ["p9"] and res.duplicates == 1 and not res.fallback
    req = chat.requests[0]
    assert req.json_schema["properties"]["page_list"]["items"]["enum"] == [f"p{h.page}" for h in hits]
    records = json.loads(req.messages[1].text().split("Candidate records:\n", 1)[1])
    assert set(records[0]) == {"page_id", "retriever_score", "visual"}  # the caption-only switch


@pytest.mark.parametrize("reply", [None, "no idea", '{"page_list": ["p42"]}'])
def test_rerank_pool_falls_back_to_pool_order(index: Index, reply: str | None) -> None:
    q = "recall of the fused ranking"
    hits = index.search(q, pool="bm25", k=20)  # two documents: ids carry a document prefix
    res = rerank_pool(index, q, hits, chat=ScriptedChat(reply), k_max=2)
    assert res.fallback and res.fallback_reason
    assert [h.key for h in res.hits] == [h.key for h in hits[:2]]
    assert ":" in res.records[0].page_id


def test_tiny_model_rerank_garbage_is_counted(
    index: Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mr, "max_tokens", lambda schema: 16)
    chat = build_model("chat", tiny_chat_profile(tmp_path, "llama"))
    q = "What was the revenue of the Coastal region?"
    hits = index.search(q, pool="bm25", doc="helios_annual_report_2023.pdf", k=3)
    res = rerank_pool(index, q, hits, chat=chat, fields="caption-only", k_max=2)
    assert res.fallback and len(res.hits) == 2 and res.stats()["fallback"] is True
