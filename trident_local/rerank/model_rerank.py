"""The LLM reranker: one chat call with the question and the records; JSON {thinking, page_list} back.

The reply is untrusted: ids outside the pool are dropped, duplicates removed,
a list longer than K_max cut; an unparsable reply (or an empty list after
repair) falls back to the pool order, and the result says so.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from trident_local.errors import ModelOutputError, TridentError
from trident_local.models import structured
from trident_local.models.budget import Fit, budget_of, fit, reply_token_bound
from trident_local.models.protocols import ChatModel, ChatRequest, Message, SamplingParams
from trident_local.rerank import prompts
from trident_local.rerank.fields import field_set
from trident_local.rerank.records import CandidateRecord, RerankResult, candidate_records, chosen_hits

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.query import Query
    from trident_local.retrieve.base import Hit


def max_tokens(schema: dict[str, Any]) -> int:
    """Budget for the bounded reply: the rationale (<= 400 chars) plus up to k_max quoted pool ids."""
    return reply_token_bound(schema)


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
    question: str,
    records: Sequence[CandidateRecord],
    fields: Sequence[str],
    k_max: int,
    limits: dict[str, int] | None = None,
) -> ChatRequest:
    """The rerank call over ``records``; ``limits`` caps fields to fit the context: ``text`` and
    ``visual`` in characters, ``entities`` in items (0 drops the field)."""
    limits = limits or {}
    views = []
    for r in records:
        v = r.prompt_view([f for f in fields if limits.get(f, 1) > 0])
        for f, cap in limits.items():
            if f in v and cap > 0:
                v[f] = v[f][:cap]
        views.append(v)
    schema = prompts.schema([r.page_id for r in records], k_max)
    return ChatRequest(
        messages=[
            Message("system", prompts.SYSTEM),
            Message("user", prompts.user_message(question, views, k_max)),
        ],
        params=SamplingParams(max_tokens=max_tokens(schema)),
        json_schema=schema,
        tag="rerank",
    )


# What goes first when the records do not fit the model's context: the least useful content for
# choosing pages first (the tail of the text snippets, then the entity lists, then the visual
# captions), and only then the lowest-ranked records themselves.
FIELD_CUTS: tuple[tuple[str, str, int], ...] = (
    ("text", "text to 300 chars", 300),
    ("text", "text to 120 chars", 120),
    ("entities", "entities to 8", 8),
    ("text", "text dropped", 0),
    ("visual", "visual to 150 chars", 150),
    ("entities", "entities dropped", 0),
    ("visual", "visual dropped", 0),
)


def fitted_rerank_request(
    chat: ChatModel, question: str, records: Sequence[CandidateRecord], fields: Sequence[str], k_max: int
) -> tuple[ChatRequest, Fit, int]:
    """(request, fit, number of records shown): the fullest rerank prompt that fits the context."""
    shown = len(records)

    def versions() -> Iterator[tuple[str, ChatRequest]]:
        nonlocal shown
        limits: dict[str, int] = {}
        yield "", rerank_request(question, records, fields, k_max)
        for f, label, cap in FIELD_CUTS:
            if f in fields:
                limits[f] = cap
                yield label, rerank_request(question, records, fields, k_max, limits)
        for n in (15, 10, k_max):
            if k_max <= n < shown:
                shown = n
                yield f"records to {n}", rerank_request(question, records[:n], fields, k_max, limits)

    req, how = fit(budget_of(chat), versions())  # lazily: the last version made is the one returned
    return req, how, shown


def model_rerank(
    chat: ChatModel, question: str, records: Sequence[CandidateRecord], fields: Sequence[str], k_max: int
) -> tuple[ParsedPageList | None, str, Fit]:
    """(parsed list, "", fit) on success; (None, reason, fit) when the pool order must be used."""
    stats = structured.CallStats()
    req, how, shown = fitted_rerank_request(chat, question, records, fields, k_max)
    reply = structured.call(chat, [req], PageListReply, stats)[0]
    if reply.result.error:
        return None, f"model call failed: {reply.result.error}", how
    if reply.value is None:
        return None, f"unusable model output: {reply.error}", how
    try:
        return page_list_of(reply.value, [r.page_id for r in records[:shown]], k_max), "", how
    except ModelOutputError as e:
        return None, f"unusable model output: {e}", how


class ModelReranker:
    """The annotated reranker: the pool's records in one chat call; the fused match without a model."""

    name: ClassVar[str] = "annotated"
    needs_model: ClassVar[bool] = True
    no_model: ClassVar[str | None] = "fused"

    def rerank(
        self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None, fields: str, k_max: int
    ) -> RerankResult:
        if chat is None:  # get_reranker hands out the no-model reranker instead
            raise TridentError("the annotated reranker needs a chat model")
        t0 = time.perf_counter()
        keep = field_set(fields)
        res = RerankResult([], f"model:{chat.name}", fields)
        if not hits:
            return res
        records = candidate_records(index, query, hits)
        parsed, reason, how = model_rerank(chat, query.text, records, keep, k_max)
        res.prompt = how.to_dict()
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
