"""The LLM reranker: one chat call with the question and the records; JSON {thinking, page_list} back.

The reply is untrusted: ids outside the pool are dropped, duplicates removed,
a list longer than K_max cut; an unparsable reply (or an empty list after
repair) falls back to the pool order, and the result says so.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, Field

from trident_local.errors import ModelOutputError, TridentError
from trident_local.models import structured
from trident_local.models.protocols import ChatModel, ChatRequest, Message, SamplingParams
from trident_local.rerank import prompts
from trident_local.rerank.records import CandidateRecord, RerankResult, chosen_hits

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.query import Query
    from trident_local.retrieve.base import Hit


def max_tokens(k_max: int) -> int:
    """Budget for the bounded reply: the rationale (<= 400 chars) plus up to k_max quoted ids."""
    return 192 + 24 * k_max


class PageListReply(BaseModel):
    """The reply's shape; ids are checked against the pool afterwards (a page number naming one pool
    page is accepted), so the sent schema's enum is not repeated here."""

    thinking: str = Field(default="", max_length=4 * prompts.THINKING_CHARS)
    page_list: list[str | int]
_PAGE_NUM = re.compile(r"^(?:p(?:age)?\s*)?(\d+)$", re.I)


@dataclass
class ParsedPageList:
    ids: list[str]
    thinking: str = ""
    dropped: list[str] = field(default_factory=list)
    duplicates: int = 0
    truncated: int = 0


def _canonical(raw: object, valid: Sequence[str]) -> str | None:
    """The pool id a model meant: exact id, or a page number / "page 12" naming exactly one pool page."""
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        return None
    s = str(raw).strip()
    if s in valid:
        return s
    m = _PAGE_NUM.match(s)
    if m:
        matches = [v for v in valid if v.split(":")[-1] == f"p{int(m.group(1))}"]
        if len(matches) == 1:
            return matches[0]
    return None


def parse_page_list(text: str, valid: Sequence[str], k_max: int) -> ParsedPageList:
    """Parse and repair a reply; raises ModelOutputError when there is no usable page_list at all."""
    value, _ = structured.parse_json_text(text)
    if isinstance(value, list):  # a bare list is a page_list without the rationale
        value = {"page_list": value}
    if not isinstance(value, dict) or not isinstance(value.get("page_list"), list):
        raise ModelOutputError("no page_list array in the reply")
    return page_list_of(value, valid, k_max)


def page_list_of(value: dict | PageListReply, valid: Sequence[str], k_max: int) -> ParsedPageList:
    """Repair a reply's ids: outside the pool dropped, duplicates removed, cut to k_max."""
    if isinstance(value, PageListReply):
        value = value.model_dump()
    thinking = value.get("thinking") if isinstance(value.get("thinking"), str) else ""
    out = ParsedPageList([], thinking[:1000])
    for raw in value["page_list"]:
        pid = _canonical(raw, valid)
        if pid is None:
            out.dropped.append(str(raw)[:40])
        elif pid in out.ids:
            out.duplicates += 1
        else:
            out.ids.append(pid)
    if len(out.ids) > k_max:
        out.truncated = len(out.ids) - k_max
        out.ids = out.ids[:k_max]
    if not out.ids:
        raise ModelOutputError(f"page_list names no pool page (dropped {out.dropped[:5]})")
    return out


def rerank_request(
    question: str, records: Sequence[CandidateRecord], fields: Sequence[str], k_max: int
) -> ChatRequest:
    views = [r.prompt_view(fields) for r in records]
    return ChatRequest(
        messages=[
            Message("system", prompts.SYSTEM),
            Message("user", prompts.user_message(question, views, k_max)),
        ],
        params=SamplingParams(max_tokens=max_tokens(k_max)),
        json_schema=prompts.schema([r.page_id for r in records], k_max),
        tag="rerank",
    )


def model_rerank(
    chat: ChatModel, question: str, records: Sequence[CandidateRecord], fields: Sequence[str], k_max: int
) -> tuple[ParsedPageList | None, str]:
    """(parsed list, "") on success; (None, reason) when the pool order must be used."""
    stats = structured.CallStats()
    reply = structured.call(chat, [rerank_request(question, records, fields, k_max)], PageListReply, stats)[0]
    if reply.result.error:
        return None, f"model call failed: {reply.result.error}"
    if reply.value is None:
        return None, f"unusable model output: {reply.error}"
    try:
        return page_list_of(reply.value, [r.page_id for r in records], k_max), ""
    except ModelOutputError as e:
        return None, f"unusable model output: {e}"


class ModelReranker:
    """The annotated reranker: the pool's records in one chat call; the fused match without a model."""

    name: ClassVar[str] = "annotated"
    needs_model: ClassVar[bool] = True
    no_model: ClassVar[str | None] = "fused"

    def rerank(
        self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None, fields: str, k_max: int
    ) -> RerankResult:
        from trident_local.rerank import candidate_records, field_set

        if chat is None:  # get_reranker hands out the no-model reranker instead
            raise TridentError("the annotated reranker needs a chat model")
        t0 = time.perf_counter()
        keep = field_set(fields)
        res = RerankResult([], f"model:{chat.name}", fields)
        if not hits:
            return res
        records = candidate_records(index, query, hits)
        parsed, reason = model_rerank(chat, query.text, records, keep, k_max)
        if parsed is None:
            res.fallback, res.fallback_reason = True, reason
            chosen = [r.page_id for r in records[:k_max]]
        else:
            chosen = parsed.ids
            res.dropped_ids, res.duplicates, res.truncated = parsed.dropped, parsed.duplicates, parsed.truncated
            res.thinking = parsed.thinking
        res.hits, res.records = chosen_hits(records, hits, chosen), records
        res.seconds = time.perf_counter() - t0
        return res
