"""Run a pool (and optionally a reranker) over dataset questions and score the pages.

The run (question -> ranked pages) is kept separate from scoring so a saved run
can be re-scored; metrics come from :mod:`retrieval_metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

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
    return RetrievalReport(pool, k, rows, summarize(rows))


def summarize(rows: Sequence[RunRow]) -> dict[str, float]:
    summary = mean_metrics([row.metrics for row in rows])
    summary["mean_k"] = summary.pop("k", 0.0)
    return {"n": len(rows), **summary}


def annotated_reranker(index: Index, *, fields: str, k: int, fallbacks: list[bool]) -> RerankFn:
    """The annotated reranker over the pool's hits (adaptive K <= ``k``), with the index's chat model
    (None: the no-model fused-match reranker); each call appends whether it fell back."""
    from trident_local.rerank import rerank_pool

    chat = index.models.chat

    def reranker(query: Query, hits: list[Hit]) -> list[Hit]:
        res = rerank_pool(index, query, hits, fields=fields, chat=chat, k_max=k)
        fallbacks.append(res.fallback)
        return res.hits

    return reranker


def run_retrieval_on_ray(
    index: Index,
    records: Sequence[QARecord],
    *,
    pool: str,
    k: int = 5,
    pool_depth: int = 20,
    fields: str | None = None,
    address: str = "local",
    workers: int = 2,
    on_step: Callable[[], None] | None = None,
) -> tuple[RetrievalReport, list[bool]]:
    """:func:`run_retrieval` in shards on Ray actors (``fields``: rerank with
    :func:`annotated_reranker`, None: pool top-K); the report and the rerank fallbacks, in record order."""
    from trident_local.scale.ray_eval import run_sharded

    records = [r for r in records if r.answerable and r.evidence_pages]
    chat_profile = index.models.profile("chat")
    work = partial(
        _retrieval_worker, pool=pool, k=k, pool_depth=pool_depth, fields=fields, chat_profile=chat_profile
    )
    pairs, _ = run_sharded(
        index,
        records,
        work,
        chat_profile=chat_profile if fields or pool == "xkg" else None,
        address=address,
        workers=workers,
        on_step=on_step,
    )
    rows = [row for row, _ in pairs]
    return RetrievalReport(pool, k, rows, summarize(rows)), [fb for _, fb in pairs if fb is not None]


def _retrieval_worker(
    index: Index, *, pool: str, k: int, pool_depth: int, fields: str | None, chat_profile: Any
) -> Callable[[list[QARecord]], list[tuple[RunRow, bool | None]]]:
    """On a Ray actor: (row, rerank fallback or None) per record, as :func:`run_retrieval` gives them."""
    index.models.use_profile("chat", chat_profile)

    def work(records: list[QARecord]) -> list[tuple[RunRow, bool | None]]:
        fallbacks: list[bool] = []
        rerank = annotated_reranker(index, fields=fields, k=k, fallbacks=fallbacks) if fields else None
        rows = run_retrieval(index, records, pool=pool, k=k, pool_depth=pool_depth, rerank=rerank).rows
        return list(zip(rows, fallbacks if fields else [None] * len(rows), strict=True))

    return work
