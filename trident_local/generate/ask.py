"""The whole Trident path for one question: evidence pipeline -> reranker -> answer strategy, with timings.

result = ask(index, "What was the revenue in 2020?", AskOptions(pool="fused", rerank="auto"),
             doc="report.pdf")

The candidate pages are those of :func:`trident_local.search.search` (the pool, with the lead-page
finders' pages first), the same pages `trident search` shows. The question becomes one
:class:`~trident_local.query.Query` (embedded once, routed once) and the models come from the index's
runtime (``index.models``): a chat profile "none" there runs every stage's no-model strategy.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from trident_local.errors import TridentError
from trident_local.generate.base import answer_names, get_answer_strategy
from trident_local.generate.records import Answer
from trident_local.query import Query

if TYPE_CHECKING:
    from trident_local.index import Index


@dataclass(frozen=True)
class AskOptions:
    """How to answer: candidate pool, reranker, record fields, answer strategy, most pages cited.

    Names are checked against the registries when the options are made."""

    pool: str = "fused"
    rerank: str = "auto"
    fields: str = "full"
    answer: str = "auto"
    k_max: int | None = None  # None: the index's k_max
    finders: str = "all"  # lead-page finders of the evidence pipeline: all | none | a comma list of names
    verify: bool = True  # check the answer against its cited pages (AtomCite) before returning it

    def __post_init__(self) -> None:
        from trident_local.rerank import field_set, reranker_names
        from trident_local.retrieve.base import pool_names
        from trident_local.search import parse_finders

        if self.pool.split(":", 1)[0] not in pool_names():
            raise TridentError(f"unknown pool {self.pool!r}; pools: {', '.join(pool_names())}")
        if self.rerank not in reranker_names():
            raise TridentError(f"unknown reranker {self.rerank!r}; rerankers: {', '.join(reranker_names())}")
        if self.answer not in answer_names():
            raise TridentError(
                f"unknown answer strategy {self.answer!r}; answer strategies: {', '.join(answer_names())}"
            )
        field_set(self.fields)
        parse_finders(self.finders)
        if self.k_max is not None and self.k_max < 1:
            raise TridentError(f"k_max must be at least 1, not {self.k_max}")


@dataclass
class AskResult:
    answer: Answer
    pool: str
    rerank: dict[str, Any]  # the reranker's statistics (mode, k, fallback, ...)
    pool_pages: list[tuple[str, int, float]]  # (doc_id, page, score) of the candidate pool
    route: dict[str, Any] | None = None  # xkg: query class and entities
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ask(
    index: Index,
    question: str | Query,
    options: AskOptions | None = None,
    *,
    doc: str | Sequence[str] | None = None,
) -> AskResult:
    """Answer ``question`` over the index (or ``doc``) with the runtime's models."""
    from trident_local.rerank import get_reranker
    from trident_local.search import search

    opts = options or AskOptions()
    query = Query.of(question)
    chat = index.models.chat
    k_max = opts.k_max or index.config.k_max
    t = {}
    t0 = time.perf_counter()
    hits = [p.hit for p in search(index, query, pool=opts.pool, doc=doc, k=index.config.pool_size,
                                  finders=opts.finders, regions=False)]
    t["retrieve"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    reranker = get_reranker(opts.rerank if hits else "none", chat)
    rr = reranker.rerank(index, query, hits, chat=chat, fields=opts.fields, k_max=k_max)
    t["rerank"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    if rr.hits:
        ans = get_answer_strategy(opts.answer, chat).answer(index, query, rr.hits, chat=chat, records=rr.records)
    else:
        ans = Answer(query.text, "Not answerable", "no pages retrieved")
    t["answer"] = time.perf_counter() - t2
    if ans.citations and not any(c.regions for c in ans.citations):  # where on each cited page the answer
        # sits: matching, no model call (a strategy that read its values from known cells cites those)
        from trident_local.generate.records import is_not_answerable
        from trident_local.regions import citation_regions, located_text

        t4 = time.perf_counter()
        said = "" if is_not_answerable(ans.text) else (ans.computation or ans.text)
        ans.citations = citation_regions(index, query.text, said, ans.citations)
        ans.located = located_text(index, ans.text, ans.citations) if said else ""
        t["regions"] = time.perf_counter() - t4
    if opts.verify and rr.hits:
        from trident_local.generate.self_check import self_check

        t3 = time.perf_counter()
        ans.verification = self_check(index, ans).to_dict()
        t["verify"] = time.perf_counter() - t3
    t["total"] = time.perf_counter() - t0
    return AskResult(
        ans,
        opts.pool,
        rr.stats(),
        [(h.doc_id, h.page, h.score) for h in hits],
        asdict(query.route) if query.route is not None else None,
        t,
    )
