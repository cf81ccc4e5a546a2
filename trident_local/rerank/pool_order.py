"""The "none" reranker: the pool's own top K, no records, no model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from trident_local.rerank.records import RerankResult

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.query import Query
    from trident_local.retrieve.base import Hit


class PoolOrder:
    name: ClassVar[str] = "none"
    needs_model: ClassVar[bool] = False
    no_model: ClassVar[str | None] = None

    def rerank(
        self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None, fields: str, k_max: int
    ) -> RerankResult:
        return RerankResult(list(hits[:k_max]), "none", fields)
