"""Run the Trident QA path over dataset questions and score it with MMLongBench-Doc generalized accuracy.

Running (question -> answer, pages) is kept apart from scoring: each row keeps
the prediction, so a saved run can be re-scored with :mod:`qa_scoring`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from trident_local.evaluate.abstention import unanswerable_metrics
from trident_local.evaluate.mmlongbench import QARecord
from trident_local.evaluate.qa_extract import PROTOCOL_AS_IS, PROTOCOL_MODEL, extract
from trident_local.evaluate.qa_scoring import ScoredSample, accuracy, breakdown, f1, score_answer
from trident_local.evaluate.run_file import in_order, pending
from trident_local.index import Index

if TYPE_CHECKING:
    from trident_local.generate.ask import AskOptions


@dataclass
class QARow:
    qid: int
    doc: str
    question: str
    gold: str
    answer_format: str
    sources: list[str]
    reply: str  # the system's answer text
    pred: str  # the short answer scored
    extraction: str  # how pred was obtained
    score: float
    pages: list[int]  # cited pages, best first
    gold_pages: list[int]
    mode: str  # answer mode
    rerank: dict[str, Any] = field(default_factory=dict)
    confidence: float | None = None  # no-model answers: their confidence (abstention calibration)
    candidate: str = ""  # no-model answers: the answer before the abstention threshold
    verification: str = ""  # the self-check's status ("" when skipped)
    features: dict[str, float] = field(default_factory=dict)  # no-model answers: the confidence's inputs


@dataclass
class QAReport:
    rows: list[QARow]
    summary: dict[str, Any]
    workers_runtime: list[dict[str, Any]] = field(default_factory=list)  # each Ray actor's runtime_report
    resumed: int = 0  # rows reused from an earlier, interrupted run


def summarize(rows: Sequence[QARow], protocol: str = PROTOCOL_AS_IS) -> dict[str, Any]:
    samples = [ScoredSample(r.gold, r.pred, r.score) for r in rows]
    ks = [len(r.pages) for r in rows]
    return {
        "n": len(rows),
        "accuracy": accuracy(samples),
        "f1": f1(samples),
        "per_format": breakdown(samples, [[r.answer_format] for r in rows]),
        "per_source": breakdown(samples, [r.sources or ["(none)"] for r in rows]),
        "mean_k": sum(ks) / len(ks) if ks else 0.0,
        "predicted_not_answerable": sum(r.pred == "Not answerable" for r in rows),
        "rerank_fallbacks": sum(bool(r.rerank.get("fallback")) for r in rows),
        "answer_errors": sum(r.extraction.startswith("as-is (") for r in rows),
        "unanswerable": unanswerable_metrics(samples),
        "self_check": dict(Counter(r.verification or "skipped" for r in rows)),
        "protocol": protocol,
    }


def run_qa(
    index: Index,
    records: Sequence[QARecord],
    options: AskOptions | None = None,
    *,
    done: Mapping[int, QARow] | None = None,
    on_rows: Callable[[list[QARow]], None] | None = None,
    on_step: Callable[[], None] | None = None,
    ray: str | None = None,
    workers: int = 2,
) -> QAReport:
    """Answer every record within its own document, extract the short answer, score it.

    The models are the index runtime's (``index.models``). ``ray``: a Ray address (or "local") to
    answer the questions in shards on Ray actors (``workers``), each with its own models; the
    rows come back in the order of ``records`` and are the same as this process would give.
    ``done``: rows of an interrupted run, by qid, reused instead of answered again; ``on_rows``:
    called with new rows as soon as they are finished (each row here, each shard on Ray).
    """
    done = done or {}
    todo = pending(records, done)
    workers_runtime: list[dict[str, Any]] = []
    if ray is None:
        new = qa_rows(index, todo, options, on_rows=on_rows, on_step=on_step)
    else:
        from trident_local.scale.ray_eval import run_sharded

        chat_profile = index.models.profile("chat")
        new, workers_runtime = run_sharded(
            index,
            todo,
            partial(_qa_worker, options=options, chat_profile=chat_profile),
            chat_profile=chat_profile,
            address=ray,
            workers=workers,
            on_step=on_step,
            on_shard=on_rows,
        )
    rows = in_order(records, done, new)
    protocol = PROTOCOL_MODEL if index.models.has("chat") else PROTOCOL_AS_IS
    return QAReport(rows, summarize(rows, protocol), workers_runtime, len(records) - len(todo))


def qa_rows(
    index: Index,
    records: Sequence[QARecord],
    options: AskOptions | None = None,
    *,
    on_rows: Callable[[list[QARow]], None] | None = None,
    on_step: Callable[[], None] | None = None,
) -> list[QARow]:
    """The scored row of each record, in order; ``on_rows`` gets each one as it is finished."""
    from trident_local.generate.ask import ask

    chat = index.models.chat
    rows = []
    for r in records:
        res = ask(index, r.question, options, doc=r.doc_id)
        ex = extract(chat, r.question, res.answer.text)
        row = QARow(
            r.qid,
            r.doc_name,
            r.question,
            r.answer,
            r.answer_format,
            r.evidence_sources,
            res.answer.text,
            ex.answer,
            ex.source,
            score_answer(r.answer, ex.answer, r.answer_format),
            [c.page for c in res.answer.citations],
            r.evidence_pages,
            res.answer.mode,
            res.rerank,
            res.answer.confidence,
            res.answer.candidate,
            (res.answer.verification or {}).get("status", ""),
            dict(res.answer.features),
        )
        rows.append(row)
        if on_rows:
            on_rows([row])
        if on_step:
            on_step()
    return rows


def _qa_worker(
    index: Index, *, options: AskOptions | None, chat_profile: Any
) -> Callable[[list[QARecord]], list[QARow]]:
    """On a Ray actor: the index's runtime set to the driver's chat profile, then ``qa_rows``."""
    index.models.use_profile("chat", chat_profile)
    return lambda records: qa_rows(index, records, options)
