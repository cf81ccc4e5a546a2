"""Score fusion of member pools: each member's scores z-normalised over the pages it was asked about,
then a weighted sum (weights in :data:`WEIGHTS`, equal for members not listed).

Why not plain RRF: rank fusion throws away how far ahead a member's best pages are, so a member that
is sure (a statement title matched by BM25, a paraphrase matched by dense) counts no more than one that
is guessing, and equal-weight RRF landed below its better member on unseen filings. z-scores keep the
margin; the weights (bm25 0.4, dense 0.6) were fitted on MMLongBench-Doc and on FinanceBench's
development split and kept because they hold on both (docs/INDEX.md#fusion).

``fused`` fuses the index config's ``rrf_members``; ``fused:bm25+colpali`` names its members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from trident_local.query import Query
from trident_local.retrieve.base import Hit, top_k
from trident_local.retrieve.rrf import FUSE_DEPTH, RRFPool

WEIGHTS = {"bm25": 0.4, "dense": 0.6}


def zscore(x: np.ndarray) -> np.ndarray:
    """``x`` centred and scaled to unit deviation; zeros when it is flat (a flat member adds nothing)."""
    sd = float(x.std())
    return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)


def z_fuse(rankings: Sequence[Sequence[Hit]], weights: Sequence[float], *, name: str = "fused") -> list[Hit]:
    """Weighted sum of per-member z-scores over the union of the members' pages; a page a member did
    not return gets that member's lowest returned score."""
    keys = list(dict.fromkeys(h.key for ranking in rankings for h in ranking))
    if not keys:
        return []
    pos = {k: i for i, k in enumerate(keys)}
    total = np.zeros(len(keys))
    for ranking, w in zip(rankings, weights, strict=True):
        if not ranking:
            continue
        s = np.full(len(keys), min(h.score for h in ranking), dtype=np.float64)
        for h in ranking:
            s[pos[h.key]] = h.score
        total += w * zscore(s)
    return top_k([Hit(d, p, float(total[i]), name) for i, (d, p) in enumerate(keys)], len(keys))


class FusedPool(RRFPool):
    name: ClassVar[str] = "fused"

    @property
    def weights(self) -> list[float]:
        raw = [WEIGHTS.get(m, 1.0 / len(self.members)) for m in self.members]
        return [w / sum(raw) for w in raw]

    def retrieve(self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        depth = max(FUSE_DEPTH, k)
        q = Query.of(query)  # one Query for every member: embedded once
        return z_fuse([p.retrieve(q, k=depth, doc_ids=doc_ids) for p in self.pools], self.weights)[:k]
