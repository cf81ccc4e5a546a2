"""The whole Trident path for one question: pool -> (annotated rerank) -> answer, with timings.

result = ask(index, "What was the revenue in 2020?", doc="report.pdf", pool="rrf",
             rerank="annotated", answer="auto", chat=model)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from trident_local.errors import TridentError
from trident_local.generate.answer import MODES, answer_question
from trident_local.generate.records import Answer

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel, TextEmbedder

RERANK_MODES = ("none", "annotated")


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
    question: str,
    *,
    doc: str | Sequence[str] | None = None,
    pool: str = "rrf",
    rerank: str = "annotated",
    fields: str = "full",
    answer: str = "auto",
    chat: ChatModel | None = None,
    chat_name: str = "chat",
    embedder: TextEmbedder | None = None,
    k_max: int | None = None,
    verify: bool = True,
) -> AskResult:
    """Answer ``question`` over the index (or ``doc``); ``chat=None`` runs every stage's no-model strategy.

    ``verify``: check the answer's claims against its cited pages before returning it (see
    :mod:`trident_local.generate.self_check`); the verdicts and their cost land in ``answer.verification``.
    """
    if rerank not in RERANK_MODES:
        raise TridentError(f"--rerank must be one of {', '.join(RERANK_MODES)}, not {rerank!r}")
    if answer not in MODES:
        raise TridentError(f"--answer must be one of {', '.join(MODES)}, not {answer!r}")
    k_max = k_max or index.config.k_max
    t = {}
    t0 = time.perf_counter()
    hits = index.search(question, pool=pool, doc=doc, k=index.config.pool_size)
    t["retrieve"] = time.perf_counter() - t0
    route = getattr(index.pool(pool), "last_route", None)

    t1 = time.perf_counter()
    concept_hits: dict[tuple[str, int], list[str]] = {}
    if rerank == "annotated" and hits:
        from trident_local.rerank import rerank_pool

        rr = rerank_pool(
            index,
            question,
            hits,
            fields=fields,
            chat=chat,
            chat_name=chat_name,
            k_max=k_max,
            embedder=embedder,
        )
        final, stats = rr.hits, rr.stats()
        concept_hits = {(r.doc_id, r.page): r.concept_hits for r in rr.records}
    else:
        final, stats = hits[:k_max], {"mode": "none", "k": min(len(hits), k_max)}
    t["rerank"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    if final:
        ans = answer_question(
            index.store,
            question,
            final,
            mode=answer,
            chat=chat,
            chat_name=chat_name,
            embedder=embedder,
            concept_hits=concept_hits,
        )
    else:
        ans = Answer(question, "Not answerable", "no pages retrieved")
    t["answer"] = time.perf_counter() - t2
    if verify and final:
        from trident_local.generate.self_check import self_check

        t3 = time.perf_counter()
        ans.verification = self_check(index.store, ans, chat=chat).to_dict()
        t["verify"] = time.perf_counter() - t3
    t["total"] = time.perf_counter() - t0
    return AskResult(
        ans,
        pool,
        stats,
        [(h.doc_id, h.page, h.score) for h in hits],
        asdict(route) if route is not None else None,
        t,
    )
