"""The pool protocol, the Hit record, and the pool registry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from trident_local.errors import TridentError
from trident_local.lazy_registry import LazyRegistry

if TYPE_CHECKING:
    from trident_kernels.ann_shards import MapFn
    from trident_local.docs.model import Document
    from trident_local.models.runtime import Models
    from trident_local.query import Query
    from trident_local.store.index_store import IndexStore


@dataclass
class Hit:
    """One retrieved page. ``page`` is 1-based."""

    doc_id: str
    page: int
    score: float
    pool: str = ""

    @property
    def key(self) -> tuple[str, int]:
        return (self.doc_id, self.page)


class Pool(Protocol):
    """A page retriever over an index.

    ``prepare(doc)`` computes per-document features into the index (idempotent,
    resumable per document); ``build()`` (re)builds the global structure from the
    prepared documents (the index writer only; ``map_fn`` may run its per-shard work in
    parallel, e.g. as Ray tasks); ``load()`` reads it; ``retrieve``
    returns the top-k pages of the given documents (all when ``doc_ids`` is None),
    best first, and never writes the index. A pool is constructed as
    ``Pool(store, models)`` and takes the models it needs from the runtime.
    """

    name: ClassVar[str]
    needs_prepare: ClassVar[bool]

    def prepare(self, doc: Document) -> None: ...

    def build(self, *, map_fn: MapFn = map) -> None: ...

    def is_stale(self) -> bool: ...

    def load(self) -> None: ...

    def retrieve(
        self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None
    ) -> list[Hit]: ...


_POOLS = LazyRegistry("pool", "pools", {
    "bm25": "trident_local.retrieve.bm25:BM25Pool",
    "dense": "trident_local.retrieve.dense:DensePool",
    "rrf": "trident_local.retrieve.rrf:RRFPool",
    "fused": "trident_local.retrieve.fused:FusedPool",
    "colpali": "trident_local.retrieve.colpali:ColPaliPool",
    "xkg": "trident_local.retrieve.xkg:XKGPool",
})


def pool_names() -> list[str]:
    return _POOLS.names()


def register_pool(name: str, target: str) -> None:
    _POOLS.register(name, target)


def pool_class(name: str) -> type:
    """The class registered for ``name`` (``base:argument`` names use the class of ``base``)."""
    base = name.split(":", 1)[0]
    if base not in _POOLS:
        raise TridentError(f"unknown pool {name!r}; pools: {', '.join(_POOLS.names())}")
    try:
        return _POOLS.load(base)
    except ModuleNotFoundError as e:
        raise TridentError(f"pool {name!r} is not available: {e}") from e


def get_pool(name: str, store: IndexStore, models: Models | None = None) -> Pool:
    """The pool ``name`` bound to ``store``, taking its models from ``models`` (the index's runtime;
    when None, one over the store's config that shares the process's built models); ``base:argument``
    passes the argument on (``rrf:bm25+colpali`` fuses those members)."""
    cls = pool_class(name)
    if models is None:
        from trident_local.models.runtime import Models

        models = Models(store.config)
    _, _, arg = name.partition(":")
    if not arg:
        return cls(store, models)
    if not hasattr(cls, "from_argument"):
        raise TridentError(f"pool {name.split(':')[0]!r} takes no argument (got {name!r})")
    return cls.from_argument(store, arg, models)


def prepare_stages(pools: Sequence[str]) -> list[str]:
    """The per-document stages the given pools add after ingestion (those with ``needs_prepare``)."""
    return [p for p in pools if pool_class(p).needs_prepare]


def top_k(hits: list[Hit], k: int) -> list[Hit]:
    """Best-first, ties broken by (doc order, page) so runs are deterministic."""
    return sorted(hits, key=lambda h: (-h.score, h.doc_id, h.page))[:k]
