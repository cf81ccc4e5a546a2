"""Abstention: how well "Not answerable" is predicted, and the confidence threshold that maximises accuracy.

A no-model answer carries a confidence and the answer it would give (its
candidate); below a threshold it abstains. A run made with every candidate kept
can therefore be re-scored at any threshold without answering again:
:func:`sweep` scores each threshold, :func:`calibrate` picks the one with the best
accuracy (ties: the higher F1, then the lower threshold). Calibrate on one split
of the documents and report on the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trident_local.evaluate.qa_scoring import NOT_ANSWERABLE, ScoredSample, accuracy, f1, score_answer


def unanswerable_metrics(samples: Sequence[ScoredSample]) -> dict[str, float | int | None]:
    """Precision and recall of predicting "Not answerable" (gold "Not answerable" = the positive class)."""
    pred = [s.pred == NOT_ANSWERABLE for s in samples]
    gold = [s.gold == NOT_ANSWERABLE for s in samples]
    tp = sum(p and g for p, g in zip(pred, gold, strict=True))
    n_pred, n_gold = sum(pred), sum(gold)
    precision = tp / n_pred if n_pred else None
    recall = tp / n_gold if n_gold else None
    return {"precision": precision, "recall": recall, "predicted": n_pred, "gold": n_gold}


@dataclass
class Candidate:
    """One question of a run: gold answer and format, the candidate answer and its confidence."""

    gold: str
    answer_format: str
    candidate: str
    confidence: float


def candidates(rows: Sequence[dict[str, Any]]) -> list[Candidate]:
    """Candidates from run rows (``eval qa --run`` JSONL); rows without a confidence cannot be re-thresholded."""
    out = []
    for r in rows:
        if r.get("confidence") is None:
            raise ValueError(f"question {r.get('qid')}: no confidence in the run (made with a chat model?)")
        out.append(Candidate(r["gold"], r["answer_format"], r.get("candidate") or r["pred"], float(r["confidence"])))
    return out


def scored_at(cands: Sequence[Candidate], threshold: float) -> list[ScoredSample]:
    out = []
    for c in cands:
        pred = c.candidate if c.confidence >= threshold else NOT_ANSWERABLE
        out.append(ScoredSample(c.gold, pred, score_answer(c.gold, pred, c.answer_format)))
    return out


def sweep(cands: Sequence[Candidate], thresholds: Sequence[float] | None = None) -> list[dict[str, Any]]:
    """Accuracy, F1 and unanswerable precision/recall at each threshold (default: 0.00 .. 1.00 by 0.01)."""
    ts = thresholds if thresholds is not None else [i / 100 for i in range(101)]
    out = []
    for t in ts:
        s = scored_at(cands, t)
        out.append({"threshold": t, "accuracy": accuracy(s), "f1": f1(s), "unanswerable": unanswerable_metrics(s)})
    return out


def calibrate(cands: Sequence[Candidate], thresholds: Sequence[float] | None = None) -> dict[str, Any]:
    """The threshold with the best accuracy (then F1, then the lowest threshold) and the whole sweep."""
    if not cands:
        raise ValueError("nothing to calibrate on")
    curve = sweep(cands, thresholds)
    best = max(curve, key=lambda r: (round(r["accuracy"], 9), round(r["f1"], 9), -r["threshold"]))
    return {"threshold": best["threshold"], "best": best, "n": len(cands), "curve": curve}
