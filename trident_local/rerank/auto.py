"""The "auto" reranker: the annotated rerank where every candidate page's document is annotated,
else the pool order.

The annotated rerank reads each candidate page's annotation record; a document indexed
without the annotation stage has none. Choosing per ask from the candidates keeps one rule
for every caller (the service's default, ``trident ask --rerank auto``) instead of each edge
deciding for itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.query import Query
    from trident_local.rerank.records import RerankResult
    from trident_local.retrieve.base import Hit


def auto_choice(index: Index, doc_ids: set[str]) -> str:
    """"annotated" when every one of ``doc_ids`` has finished the annotation stage, else "none"."""
    from trident_local.annotate.cache import STAGE

    entries = index.store.manifest.documents
    return "annotated" if doc_ids and all(entries[d].stages.get(STAGE) for d in doc_ids if d in entries) else "none"


class AutoReranker:
    name: ClassVar[str] = "auto"
    needs_model: ClassVar[bool] = False  # the reranker it picks brings its own no-model stand-in
    no_model: ClassVar[str | None] = None

    def rerank(
        self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None, fields: str, k_max: int
    ) -> RerankResult:
        from trident_local.rerank.base import get_reranker

        choice = auto_choice(index, {h.doc_id for h in hits})
        return get_reranker(choice, chat).rerank(index, query, hits, chat=chat, fields=fields, k_max=k_max)
