"""Reciprocal rank fusion of member pools' rankings: score = sum 1 / (k0 + rank), k0 = 60, ranks from 1.

``rrf`` fuses the index config's ``rrf_members`` (bm25 + dense by default);
``rrf:bm25+colpali`` names its members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from trident_local.docs.model import Document
from trident_local.errors import TridentError
from trident_local.fusion import RRF_K, rrf
from trident_local.query import Query
from trident_local.retrieve.base import Hit, get_pool, top_k
from trident_local.store.index_store import IndexStore

if TYPE_CHECKING:
    from trident_kernels.ann_shards import MapFn

FUSE_DEPTH = 100  # how deep each ranking is read


def rrf_fuse(rankings: Sequence[Sequence[Hit]], *, k0: int = RRF_K, name: str = "rrf") -> list[Hit]:
    """Fuse best-first rankings by reciprocal rank; pages missing from a ranking get nothing from it."""
    scores = rrf(([h.key for h in ranking] for ranking in rankings), k0)
    return top_k([Hit(d, p, s, name) for (d, p), s in scores.items()], len(scores))


class RRFPool:
    name: ClassVar[str] = "rrf"
    needs_prepare: ClassVar[bool] = False

    def __init__(self, store: IndexStore, models=None, members: Sequence[str] | None = None):
        self.store = store
        self.members = list(members if members is not None else store.config.rrf_members)
        if not self.members or any(m.startswith(("rrf", "fused")) for m in self.members):
            raise TridentError(f"{self.name} fuses plain pools, e.g. {self.name}:bm25+dense; "
                               f"got {'+'.join(self.members)!r}")
        self.pools = [get_pool(m, store, models) for m in self.members]

    @classmethod
    def from_argument(cls, store: IndexStore, argument: str, models=None) -> RRFPool:
        """``bm25+colpali`` -> those members."""
        return cls(store, models, [m.strip() for m in argument.split("+") if m.strip()])

    def prepare(self, doc: Document) -> None:
        return None

    def is_stale(self) -> bool:
        return any(p.is_stale() for p in self.pools)

    def build(self, *, map_fn: MapFn = map) -> None:
        for p in self.pools:
            if p.is_stale():
                p.build(map_fn=map_fn)

    def load(self) -> None:
        for p in self.pools:
            p.load()

    def retrieve(self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        depth = max(FUSE_DEPTH, k)
        q = Query.of(query)  # one Query for every member: embedded once
        return rrf_fuse([p.retrieve(q, k=depth, doc_ids=doc_ids) for p in self.pools])[:k]
