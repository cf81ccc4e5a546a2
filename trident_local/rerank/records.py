"""Candidate records (one per pool page) and the rerank result.

A record joins what the retriever said (score) with what annotation stored
(section, visual caption, entity tags, snippet) and which concepts the question
hits on that page. Records are built once per query and shared by the LLM and
no-model rerankers, so both see the same evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from trident_local.annotate import load
from trident_local.annotate.concept_match import ConceptMatch, match_concepts
from trident_local.retrieve.base import Hit
from trident_local.store.index_store import IndexStore

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.query import Query


@dataclass
class CandidateRecord:
    page_id: str  # "p12", or "<doc>:p12" when the pool spans several documents
    doc_id: str
    page: int
    retriever_score: float
    concept_hits: list[str] = field(default_factory=list)  # <= 6 tags "T:...", "E:...", "S:..."
    section: str = ""
    visual: str = ""
    entities: list[str] = field(default_factory=list)  # "type:text"
    text: str = ""  # the 600-character snippet
    concept_score: float = 0.0  # sum of the hits' score x weight (no-model feature, not shown to the model)

    def prompt_view(self, fields: Sequence[str]) -> dict[str, Any]:
        """What the model sees under a field switch: page_id, retriever_score, then the chosen fields."""
        d: dict[str, Any] = {"page_id": self.page_id, "retriever_score": round(self.retriever_score, 4)}
        for f in fields:
            d[f] = getattr(self, f)
        return d


@dataclass
class RerankResult:
    """The final page order (adaptive K) and what happened on the way, for run statistics."""

    hits: list[Hit]
    mode: str  # "none", "no-model:fused-match" or "model:<profile>"
    fields: str = "full"
    fallback: bool = False  # model output unusable: pool order was used
    fallback_reason: str = ""
    dropped_ids: list[str] = field(default_factory=list)  # ids not in the pool
    duplicates: int = 0
    truncated: int = 0  # ids beyond K_max
    thinking: str = ""
    kept_pool_order: bool = False  # no-model: the fused order was not confident, the pool's top K_max was kept
    gate: str = ""  # no-model: "pool", "fused" (fused order, K_max pages) or "fused-cut" (adaptive K)
    scores: dict[str, float] = field(default_factory=dict)  # no-model: page_id -> fused score
    records: list[CandidateRecord] = field(default_factory=list)  # all pool records, pool order
    prompt: dict[str, Any] = field(default_factory=dict)  # model: the prompt's tokens and what was cut to fit
    note: str = ""  # why this reranker ran (the "auto" choice), shown to the user
    seconds: float = 0.0

    @property
    def k(self) -> int:
        return len(self.hits)

    def stats(self) -> dict[str, Any]:
        if self.mode == "none":  # the pool order: nothing else happened
            return {"mode": "none", "k": self.k, **({"note": self.note} if self.note else {})}
        return {
            "mode": self.mode,
            "fields": self.fields,
            "k": self.k,
            "fallback": self.fallback,
            "fallback_reason": self.fallback_reason,
            "dropped_ids": list(self.dropped_ids),
            "duplicates": self.duplicates,
            "truncated": self.truncated,
            "kept_pool_order": self.kept_pool_order,
            **({"gate": self.gate} if self.gate else {}),
            **({"note": self.note} if self.note else {}),
            **({"prompt": dict(self.prompt)} if self.prompt else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def page_id(hit: Hit, multi_doc: bool, short: dict[str, str]) -> str:
    return f"{short[hit.doc_id]}:p{hit.page}" if multi_doc else f"p{hit.page}"


def build_records(
    store: IndexStore, hits: Sequence[Hit], qvec: np.ndarray, query_entities: list[str]
) -> list[CandidateRecord]:
    """One record per hit, in pool order; every document in the pool must be annotated."""
    doc_ids = list(dict.fromkeys(h.doc_id for h in hits))
    multi = len(doc_ids) > 1
    short = {d: d[:8] for d in doc_ids}
    matches: dict[str, ConceptMatch] = {
        d: match_concepts(load(store, d), qvec, query_entities) for d in doc_ids
    }
    out = []
    for h in hits:
        m = matches[h.doc_id]
        rec = m.loaded.annotation.page(h.page)
        hit_tags = m.hits(h.page)
        out.append(
            CandidateRecord(
                page_id=page_id(h, multi, short),
                doc_id=h.doc_id,
                page=h.page,
                retriever_score=float(h.score),
                concept_hits=[t for t, _ in hit_tags],
                section=rec.section,
                visual=rec.visual,
                entities=rec.entity_tags(),
                text=rec.snippet,
                concept_score=sum(s for _, s in hit_tags),
            )
        )
    return out


def candidate_records(index: Index, query: Query, hits: Sequence[Hit]) -> list[CandidateRecord]:
    """One record per pool page (pool order), matched with the query's one embedding and entities."""
    return build_records(index.store, hits, query.vector(index.models.embedder), query.entities)


def chosen_hits(records: Sequence[CandidateRecord], hits: Sequence[Hit], chosen: Sequence[str]) -> list[Hit]:
    """The pool hits named by ``chosen`` page ids, in that order (records and hits in pool order)."""
    by_id = {r.page_id: h for r, h in zip(records, hits, strict=True)}
    return [Hit(by_id[p].doc_id, by_id[p].page, by_id[p].score, by_id[p].pool) for p in chosen]
