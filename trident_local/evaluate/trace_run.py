"""Run the trace system over a LitTraceQA dataset, rung by rung, and score it (the oracle ladder).

Rungs:

- ``end_to_end``: the system picks papers, evidence and answer;
- ``oracle_papers``: the gold papers are given (paper retrieval skipped);
- ``oracle_evidence``: the gold evidence items are given (papers and evidence are then the gold ones; only
  the answer is the system's).

    out = run_ladder(Index.open("idx"), load_dataset("dev.json"))
    out["answer_accuracy"], out["ladder"]["oracle_papers"]["evidence_f1"]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trident_local.errors import TridentError
from trident_local.evaluate.trace_metrics import REL_TOL, TABLE_THRESHOLD, score_predictions

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.trace import Tracer

RUNGS = ("end_to_end", "oracle_papers", "oracle_evidence")
HEADLINE = ("paper_precision", "paper_recall", "paper_f1", "evidence_precision", "evidence_recall", "evidence_f1",
            "answer_accuracy", "answer_score", "joint_success")


def check_papers(tracer: Tracer, records: Sequence[Mapping[str, Any]]) -> None:
    """Every gold paper must be in the index; raises TridentError naming the missing ones."""
    missing = set()
    for r in records:
        for p in r["gold_papers"]:
            try:
                tracer.papers.resolve(str(p))
            except TridentError:
                missing.add(str(p))
    if missing:
        have = ", ".join(sorted(x.paper_id for x in tracer.papers.records()))
        raise TridentError(f"gold paper(s) not in the index: {', '.join(sorted(missing))}; the index has: {have}")


def predict(tracer: Tracer, record: Mapping[str, Any], rung: str) -> dict[str, Any]:
    """The system's prediction for one record on one rung."""
    kw: dict[str, Any] = {}
    if rung == "oracle_papers":
        kw["papers"] = record["gold_papers"]
    elif rung == "oracle_evidence":
        kw["papers"] = record["gold_papers"]
        kw["evidence"] = record["gold_evidence"]
    elif rung != "end_to_end":
        raise TridentError(f"unknown rung {rung!r}; rungs: {', '.join(RUNGS)}")
    t0 = time.perf_counter()
    res = tracer.trace(record["question"], record.get("answer_format", "free_form"), record.get("choices"), **kw)
    pred = res.prediction(str(record["id"]))
    pred["seconds"] = round(time.perf_counter() - t0, 3)
    return pred


def run_ladder(
    index: Index,
    records: Sequence[Mapping[str, Any]],
    *,
    rungs: Sequence[str] = RUNGS,
    tracer: Tracer | None = None,
    chat: Any = None,
    table_threshold: float = TABLE_THRESHOLD,
    rel_tol: float = REL_TOL,
    on_record: Callable[[str, Mapping[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Predictions and scores for each rung. The top-level keys are the first rung's scores (end-to-end when it
    runs); ``ladder`` holds every rung's scores, ``predictions`` every rung's predictions."""
    from trident_local.trace import Tracer

    tracer = tracer or Tracer(index, chat)
    check_papers(tracer, records)
    ladder: dict[str, Any] = {}
    preds_by_rung: dict[str, list[dict[str, Any]]] = {}
    for rung in rungs:
        t0 = time.perf_counter()
        preds = []
        for r in records:
            preds.append(predict(tracer, r, rung))
            if on_record:
                on_record(rung, r)
        scores = score_predictions(records, preds, table_threshold=table_threshold, rel_tol=rel_tol)
        scores["seconds"] = round(time.perf_counter() - t0, 2)
        scores["modes"] = sorted({p.get("mode", "") for p in preds})
        ladder[rung] = scores
        preds_by_rung[rung] = preds
    first = ladder[rungs[0]] if rungs else {}
    out: dict[str, Any] = {k: first.get(k) for k in HEADLINE}
    out.update(n=len(records), rungs=list(rungs), model=getattr(tracer.chat, "name", "none") if tracer.chat else "none",
               answer_mode="generated" if tracer.chat else "extractive", table_threshold=table_threshold,
               ladder=ladder, predictions=preds_by_rung)
    return out


def ladder_rows(out: Mapping[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """(rung, headline scores) rows for printing."""
    return [(rung, {k: float(s[k]) for k in HEADLINE}) for rung, s in out.get("ladder", {}).items()]
