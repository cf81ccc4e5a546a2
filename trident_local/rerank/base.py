"""The reranker protocol and registry: a name -> "module:attr", imported on first use.

A reranker turns a candidate pool (best first) into at most ``k_max`` pages. One
that needs a chat model names the no-model reranker that stands in for it when
the run has none (``no_model``), so callers never branch on ``chat is None``.
Adding a reranker: one module with a class implementing :class:`Reranker`, and
one line in ``_REGISTRY`` below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from trident_local.lazy_registry import LazyRegistry

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.query import Query
    from trident_local.rerank.records import RerankResult
    from trident_local.retrieve.base import Hit


class Reranker(Protocol):
    """``rerank`` returns the final pages and, when it built them, the pool's candidate records."""

    name: ClassVar[str]
    needs_model: ClassVar[bool]
    no_model: ClassVar[str | None]  # the reranker used instead when there is no chat model

    def rerank(
        self,
        index: Index,
        query: Query,
        hits: Sequence[Hit],
        *,
        chat: ChatModel | None,
        fields: str,
        k_max: int,
    ) -> RerankResult: ...


_REGISTRY = LazyRegistry("reranker", "rerankers", {
    "none": "trident_local.rerank.pool_order:PoolOrder",
    "annotated": "trident_local.rerank.model_rerank:ModelReranker",
    "fused": "trident_local.rerank.fused:FusedReranker",
    "auto": "trident_local.rerank.auto:AutoReranker",  # annotated when the candidates' documents are, else none
})


def reranker_names() -> list[str]:
    return _REGISTRY.names()


def register_reranker(name: str, target: str) -> None:
    """Add a reranker as a lazy "module:attr" target."""
    _REGISTRY.register(name, target)


def get_reranker(name: str, chat: ChatModel | None = None) -> Reranker:
    """The reranker ``name``, or its no-model stand-in when it needs a model and ``chat`` is None."""
    return _REGISTRY.build(name, chat)
