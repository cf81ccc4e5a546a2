"""Run a pool (and optionally a reranker) over dataset questions and score the pages.

The run (question -> ranked pages) is kept separate from scoring so a saved run
can be re-scored; metrics come from :mod:`retrieval_metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from trident_local.evaluate.mmlongbench import QARecord
from trident_local.evaluate.retrieval_metrics import mean_metrics, page_metrics, recall_at
from trident_local.index import Index
from trident_local.query import Query
from trident_local.retrieve.base import Hit

# (the record's query, pool hits) -> final best-first hits (e.g. an adaptive-K rerank)
RerankFn = Callable[[Query, list[Hit]], list[Hit]]


@dataclass
class RunRow:
    qid: int
    doc: str
    gold: list[int]
    pool_pages: list[int]  # the M-page candidate pool, best first
    ranked: list[int]  # final ranking (pool order, or the reranker's list)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class RetrievalReport:
    pool: str
    k: int
    rows: list[RunRow]
    summary: dict[str, float]


def run_retrieval(
    index: Index,
    records: Sequence[QARecord],
    *,
    pool: str,
    k: int = 5,
    pool_depth: int = 20,
    rerank: RerankFn | None = None,
    on_step: Callable[[], None] | None = None,
) -> RetrievalReport:
    """Per-document retrieval for every answerable record; metrics averaged over them."""
    rows: list[RunRow] = []
    p = index.pool(pool)
    for r in records:
        if not r.answerable or not r.evidence_pages:
            continue
        q = Query(r.question)  # one Query for pool and reranker: embedded once
        hits = p.retrieve(q, k=pool_depth, doc_ids=[r.doc_id])
        final = rerank(q, hits) if rerank else hits[:k]
        gold = set(r.evidence_pages)
        pool_pages = [h.page for h in hits]
        ranked = [h.page for h in final]
        m = page_metrics(ranked, gold, k)
        m[f"recall@{pool_depth}"] = recall_at(pool_pages, gold, pool_depth)
        m["k"] = float(min(len(ranked), k))
        rows.append(RunRow(r.qid, r.doc_name, sorted(gold), pool_pages, ranked, m))
        if on_step:
            on_step()
    summary = mean_metrics([row.metrics for row in rows])
    summary["mean_k"] = summary.pop("k", 0.0)
    summary = {"n": len(rows), **summary}
    return RetrievalReport(pool, k, rows, summary)
