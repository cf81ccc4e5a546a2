"""Adaptive-K reranking of a candidate pool over annotated page records.

result = rerank_pool(index, question, hits)               # no-model fused match (CPU default)
result = rerank_pool(index, question, hits, chat=model)   # one LLM call, JSON page list
result.hits   # final order, 1 <= K <= k_max
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from trident_local.rerank.fields import FIELD_SETS, field_set
from trident_local.rerank.records import CandidateRecord, RerankResult

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel, TextEmbedder
    from trident_local.retrieve.base import Hit

__all__ = ["FIELD_SETS", "NO_MODEL", "CandidateRecord", "RerankResult", "rerank_pool"]

NO_MODEL = "no-model:fused-match"
_EMBEDDERS: dict[str, TextEmbedder] = {}


def _embedder(index: Index) -> TextEmbedder:
    from trident_local.models.profiles import build_model

    name = index.config.embedder
    if name not in _EMBEDDERS:
        _EMBEDDERS[name] = build_model("embedder", name)
    return _EMBEDDERS[name]


def rerank_pool(
    index: Index,
    question: str,
    hits: Sequence[Hit],
    *,
    fields: str = "full",
    chat: ChatModel | None = None,
    chat_name: str = "chat",
    k_max: int = 5,
    embedder: TextEmbedder | None = None,
    qvec=None,
) -> RerankResult:
    """Rerank a pool (best first) into at most ``k_max`` pages; the model reranker when ``chat`` is given."""
    from trident_local.retrieve.base import Hit
    from trident_local.retrieve.router import query_entities

    t0 = time.perf_counter()
    keep = field_set(fields)
    if not hits:
        return RerankResult([], NO_MODEL if chat is None else f"model:{chat_name}", fields)
    if qvec is None:  # callers that already embedded the question (dense pool, eval loops) pass it in
        qvec = (embedder or _embedder(index)).encode([question], kind="query")[0]
    from trident_local.rerank.records import build_records

    records = build_records(index.store, hits, qvec, query_entities(question))
    by_id = {r.page_id: h for r, h in zip(records, hits, strict=True)}

    if chat is None:
        from trident_local.rerank.fused import fused_scores
        from trident_local.rerank.gate import choose

        scores = fused_scores(index.store, question, qvec, records, keep)
        picked, trusted = choose([float(s) for s in scores], k_max)
        chosen = [records[i].page_id for i in picked]
        res = RerankResult(
            [], NO_MODEL, fields, scores={r.page_id: float(s) for r, s in zip(records, scores, strict=True)}
        )
        res.kept_pool_order = not trusted
    else:
        from trident_local.rerank.model_rerank import model_rerank

        parsed, reason = model_rerank(chat, question, records, keep, k_max)
        res = RerankResult([], f"model:{chat_name}", fields)
        if parsed is None:
            res.fallback, res.fallback_reason = True, reason
            chosen = [r.page_id for r in records[:k_max]]
        else:
            chosen = parsed.ids
            res.dropped_ids, res.duplicates, res.truncated = (
                parsed.dropped,
                parsed.duplicates,
                parsed.truncated,
            )
            res.thinking = parsed.thinking
    res.hits = [Hit(by_id[p].doc_id, by_id[p].page, by_id[p].score, by_id[p].pool) for p in chosen]
    res.records = records
    res.seconds = time.perf_counter() - t0
    return res
