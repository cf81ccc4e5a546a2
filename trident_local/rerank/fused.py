"""The no-model reranker: a fused lexical + embedding match of the question against each record field.

For every candidate record and every field the switch keeps, two matches are
computed: cosine between the question vector and the field's cached vector, and
the IDF-weighted share of the question's terms found in the field (IDF over the
pool's records). Each feature is min-max scaled over the pool, so no field wins
by its scale alone, and the fused score is

    score = W_RET * retriever + sum over fields f of W[f] * (cos_f + lex_f) / 2 + W[concept_hits] * concepts

Where the fused order is trusted, and where it may cut K (adaptive K), is
decided in :mod:`trident_local.rerank.gate`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from trident_local.annotate import load
from trident_local.annotate.records import FIELD_NAMES
from trident_local.fusion import combsum, minmax
from trident_local.rerank.fields import field_set
from trident_local.rerank.gate import choose
from trident_local.rerank.records import CandidateRecord, RerankResult, candidate_records, chosen_hits
from trident_local.store.index_store import IndexStore
from trident_local.text import idf_table, terms, weighted_overlap

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.query import Query
    from trident_local.retrieve.base import Hit

W_RET = 1.0
WEIGHTS: dict[str, float] = {"visual": 0.6, "section": 0.3, "entities": 0.5, "text": 0.6, "concept_hits": 0.4}


def _field_text(rec: CandidateRecord, f: str) -> str:
    if f == "entities":
        return " ".join(e.split(":", 1)[-1] for e in rec.entities)
    return getattr(rec, f)


def fused_scores(
    store: IndexStore,
    question: str,
    qvec: np.ndarray,
    records: Sequence[CandidateRecord],
    fields: Sequence[str],
) -> np.ndarray:
    """One fused score per record (pool order)."""
    n = len(records)
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    q_terms = terms(question)
    idf = idf_table(
        [
            terms(" ".join(_field_text(r, f) for f in ("section", "visual", "entities", "text")))
            for r in records
        ]
    )
    default_idf = float(np.log(1.0 + n))
    score = W_RET * minmax(np.array([r.retriever_score for r in records], dtype=np.float32))
    q = np.asarray(qvec, dtype=np.float32).reshape(-1)
    for f in fields:
        if f == "concept_hits":
            score += WEIGHTS[f] * minmax(np.array([r.concept_score for r in records], dtype=np.float32))
            continue
        row = FIELD_NAMES.index(f)
        cos = np.array(
            [float(load(store, r.doc_id).field_vecs[r.page - 1, row] @ q) for r in records], dtype=np.float32
        )
        lex = np.array(
            [weighted_overlap(q_terms, terms(_field_text(r, f)), idf, default_idf) for r in records],
            dtype=np.float32,
        )
        score += WEIGHTS[f] * combsum([cos, lex])
    return score


class FusedReranker:
    """The no-model reranker: fused field scores; the fused order where it is confident, the adaptive-K
    cut where it is very confident (:mod:`trident_local.rerank.gate`), else the pool's own top K."""

    name: ClassVar[str] = "fused"
    needs_model: ClassVar[bool] = False
    no_model: ClassVar[str | None] = None
    mode: ClassVar[str] = "no-model:fused-match"

    def rerank(
        self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None, fields: str, k_max: int
    ) -> RerankResult:
        t0 = time.perf_counter()
        keep = field_set(fields)
        if not hits:
            return RerankResult([], self.mode, fields)
        records = candidate_records(index, query, hits)
        scores = fused_scores(index.store, query.text, query.vector(index.models.embedder), records, keep)
        picked, decision = choose([float(s) for s in scores], k_max)  # the pool's order where not confident
        res = RerankResult(
            chosen_hits(records, hits, [records[i].page_id for i in picked]),
            self.mode,
            fields,
            scores={r.page_id: float(s) for r, s in zip(records, scores, strict=True)},
            records=records,
        )
        res.kept_pool_order = decision == "pool"
        res.gate = decision
        res.seconds = time.perf_counter() - t0
        return res
