"""Adaptive-K reranking of a candidate pool over annotated page records.

result = rerank_pool(index, question, hits)               # no-model fused match (CPU default)
result = rerank_pool(index, question, hits, chat=model)   # one LLM call, JSON page list
result.hits     # final order, 1 <= K <= k_max
result.records  # every pool page's record, for the answer stage's citations

Rerankers are registered by name in :mod:`trident_local.rerank.base`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from trident_local.query import Query
from trident_local.rerank.base import Reranker, get_reranker, register_reranker, reranker_names
from trident_local.rerank.fields import FIELD_SETS, field_set

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.rerank.records import CandidateRecord, RerankResult
    from trident_local.retrieve.base import Hit

__all__ = [
    "FIELD_SETS",
    "NO_MODEL",
    "CandidateRecord",
    "Reranker",
    "RerankResult",
    "field_set",
    "get_reranker",
    "register_reranker",
    "rerank_pool",
    "reranker_names",
]

NO_MODEL = "no-model:fused-match"


def __getattr__(name: str):  # records pull in the annotation stack: imported when first used
    if name in ("CandidateRecord", "RerankResult"):
        from trident_local.rerank import records

        return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def rerank_pool(
    index: Index,
    question: str | Query,
    hits: Sequence[Hit],
    *,
    fields: str = "full",
    chat: ChatModel | None = None,
    k_max: int = 5,
) -> RerankResult:
    """The annotated reranker: one model call when ``chat`` is given, the no-model fused match otherwise."""
    return get_reranker("annotated", chat).rerank(
        index, Query.of(question), hits, chat=chat, fields=fields, k_max=k_max
    )
