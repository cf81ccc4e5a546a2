"""Run the evidence pipeline (and optionally a reranker) over dataset questions and score the pages.

The pages are those of :func:`trident_local.search.search`, the list `trident search` shows: at the
defaults this scores what a user sees; ``finders="none"`` scores the pool alone (ablations). The run
(question -> ranked pages) is kept separate from scoring so a saved run can be re-scored; metrics come
from :mod:`retrieval_metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from trident_local.evaluate.mmlongbench import QARecord
from trident_local.evaluate.retrieval_metrics import mean_metrics, page_metrics, recall_at
from trident_local.evaluate.run_file import in_order, pending
from trident_local.index import Index
from trident_local.query import Query
from trident_local.retrieve.base import Hit
from trident_local.search import search

# (the record's query, pool hits) -> (final best-first hits, whether it fell back to the pool order)
RerankFn = Callable[[Query, list[Hit]], tuple[list[Hit], bool]]


@dataclass
class RunRow:
    qid: int
    doc: str
    gold: list[int]
    pool_pages: list[int]  # the M-page candidate pool, best first
    ranked: list[int]  # final ranking (pool order, or the reranker's list)
    metrics: dict[str, float] = field(default_factory=dict)
    fallback: bool | None = None  # the reranker fell back to the pool order (None: no reranker)


@dataclass
class RetrievalReport:
    pool: str
    k: int
    rows: list[RunRow]
    summary: dict[str, float]
    resumed: int = 0  # rows reused from an earlier, interrupted run

    @property
    def fallbacks(self) -> int:
        """Questions whose reranker fell back to the pool order."""
        return sum(bool(row.fallback) for row in self.rows)


def run_retrieval(
    index: Index,
    records: Sequence[QARecord],
    *,
    pool: str,
    k: int = 5,
    pool_depth: int = 20,
    finders: str = "all",
    rerank: RerankFn | None = None,
    done: Mapping[int, RunRow] | None = None,
    on_rows: Callable[[list[RunRow]], None] | None = None,
    on_step: Callable[[], None] | None = None,
) -> RetrievalReport:
    """Per-document retrieval for every answerable record; metrics averaged over them.

    ``done``: rows of an interrupted run, by qid, reused instead of run again; ``on_rows``: called
    with each new row as soon as it is finished.
    """
    records = answerable(records)
    done = done or {}
    todo = pending(records, done)
    new: list[RunRow] = []
    for r in todo:
        q = Query(r.question)  # one Query for pool and reranker: embedded once
        hits = [p.hit for p in search(index, q, pool=pool, doc=[r.doc_id], k=pool_depth, finders=finders,
                                      regions=False)]
        final, fallback = rerank(q, hits) if rerank else (hits[:k], None)
        gold = set(r.evidence_pages)
        pool_pages = [h.page for h in hits]
        ranked = [h.page for h in final]
        m = page_metrics(ranked, gold, k)
        m[f"recall@{pool_depth}"] = recall_at(pool_pages, gold, pool_depth)
        m["k"] = float(min(len(ranked), k))
        new.append(RunRow(r.qid, r.doc_name, sorted(gold), pool_pages, ranked, m, fallback))
        if on_rows:
            on_rows(new[-1:])
        if on_step:
            on_step()
    rows = in_order(records, done, new)
    return RetrievalReport(pool, k, rows, summarize(rows), len(records) - len(todo))


def answerable(records: Sequence[QARecord]) -> list[QARecord]:
    """The records retrieval is scored on: answerable, with gold pages."""
    return [r for r in records if r.answerable and r.evidence_pages]


def summarize(rows: Sequence[RunRow]) -> dict[str, float]:
    summary = mean_metrics([row.metrics for row in rows])
    summary["mean_k"] = summary.pop("k", 0.0)
    return {"n": len(rows), **summary}


def annotated_reranker(index: Index, *, fields: str, k: int) -> RerankFn:
    """The annotated reranker over the pool's hits (adaptive K <= ``k``), with the index's chat model
    (None: the no-model fused-match reranker)."""
    from trident_local.rerank import rerank_pool

    chat = index.models.chat

    def reranker(query: Query, hits: list[Hit]) -> tuple[list[Hit], bool]:
        res = rerank_pool(index, query, hits, fields=fields, chat=chat, k_max=k)
        return res.hits, res.fallback

    return reranker


def run_retrieval_on_ray(
    index: Index,
    records: Sequence[QARecord],
    *,
    pool: str,
    k: int = 5,
    pool_depth: int = 20,
    finders: str = "all",
    fields: str | None = None,
    address: str = "local",
    workers: int = 2,
    done: Mapping[int, RunRow] | None = None,
    on_rows: Callable[[list[RunRow]], None] | None = None,
    on_step: Callable[[], None] | None = None,
) -> RetrievalReport:
    """:func:`run_retrieval` in shards on Ray actors (``fields``: rerank with
    :func:`annotated_reranker`, None: pool top-K), the rows in record order; only the records
    not in ``done`` are sent out, and ``on_rows`` gets each shard's rows as it comes back."""
    from trident_local.scale.ray_eval import run_sharded

    records = answerable(records)
    done = done or {}
    todo = pending(records, done)
    chat_profile = index.models.profile("chat")
    work = partial(
        _retrieval_worker, pool=pool, k=k, pool_depth=pool_depth, finders=finders, fields=fields,
        chat_profile=chat_profile,
    )
    new, _ = run_sharded(
        index,
        todo,
        work,
        chat_profile=chat_profile if fields or pool == "xkg" else None,
        address=address,
        workers=workers,
        on_step=on_step,
        on_shard=on_rows,
    )
    rows = in_order(records, done, new)
    return RetrievalReport(pool, k, rows, summarize(rows), len(records) - len(todo))


def _retrieval_worker(
    index: Index, *, pool: str, k: int, pool_depth: int, finders: str, fields: str | None, chat_profile: Any
) -> Callable[[list[QARecord]], list[RunRow]]:
    """On a Ray actor: the rows of :func:`run_retrieval` for a shard of records."""
    index.models.use_profile("chat", chat_profile)

    def work(records: list[QARecord]) -> list[RunRow]:
        rerank = annotated_reranker(index, fields=fields, k=k) if fields else None
        return run_retrieval(index, records, pool=pool, k=k, pool_depth=pool_depth, finders=finders,
                             rerank=rerank).rows

    return work
