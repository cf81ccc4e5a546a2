"""Reciprocal rank fusion of the BM25 and dense rankings: score = sum 1 / (k0 + rank), k0 = 60, ranks from 1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from trident_local.docs.model import Document
from trident_local.fusion import RRF_K, rrf
from trident_local.retrieve.base import Hit, get_pool, top_k
from trident_local.store.index_store import IndexStore

FUSE_DEPTH = 100  # how deep each ranking is read


def rrf_fuse(rankings: Sequence[Sequence[Hit]], *, k0: int = RRF_K, name: str = "rrf") -> list[Hit]:
    """Fuse best-first rankings by reciprocal rank; pages missing from a ranking get nothing from it."""
    scores = rrf(([h.key for h in ranking] for ranking in rankings), k0)
    return top_k([Hit(d, p, s, name) for (d, p), s in scores.items()], len(scores))


class RRFPool:
    name: ClassVar[str] = "rrf"
    needs_prepare: ClassVar[bool] = False
    members: ClassVar[tuple[str, ...]] = ("bm25", "dense")

    def __init__(self, store: IndexStore):
        self.store = store
        self.pools = [get_pool(m, store) for m in self.members]

    def prepare(self, doc: Document) -> None:
        return None

    def is_stale(self) -> bool:
        return any(p.is_stale() for p in self.pools)

    def build(self) -> None:
        for p in self.pools:
            if p.is_stale():
                p.build()

    def retrieve(self, query: str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        depth = max(FUSE_DEPTH, k)
        return rrf_fuse([p.retrieve(query, k=depth, doc_ids=doc_ids) for p in self.pools])[:k]
