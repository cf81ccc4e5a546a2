"""Abstention: how well "Not answerable" is predicted, and the confidence threshold that maximises accuracy.

A no-model answer carries a confidence and the answer it would give (its
candidate); below a threshold it abstains. A run made with every candidate kept
can therefore be re-scored at any threshold without answering again:
:func:`sweep` scores each threshold, :func:`calibrate` picks the one with the best
accuracy (ties: the higher F1, then the lower threshold). :func:`refit` first fits
the confidence model itself on the run's recorded features
(:mod:`trident_local.generate.answer_confidence`). Calibrate on one split of the
documents and report on the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from trident_local.evaluate.qa_extract import as_is
from trident_local.evaluate.qa_scoring import NOT_ANSWERABLE, ScoredSample, accuracy, f1, score_answer
from trident_local.generate.answer_confidence import AnswerConfidence, fit


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
    features: dict[str, float] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        """Whether the candidate, answered, would score (the as-is extraction first)."""
        return score_answer(self.gold, as_is(self.candidate), self.answer_format) > 0


def candidates(rows: Sequence[dict[str, Any]]) -> list[Candidate]:
    """Candidates from run rows (``eval qa --run`` JSONL); rows without a confidence cannot be re-thresholded."""
    out = []
    for r in rows:
        if r.get("confidence") is None:
            raise ValueError(f"question {r.get('qid')}: no confidence in the run (made with a chat model?)")
        out.append(Candidate(r["gold"], r["answer_format"], r.get("candidate") or r["pred"], float(r["confidence"]),
                             dict(r.get("features") or {})))
    return out


def refit(cands: Sequence[Candidate], *, c: float = 1.0) -> tuple[AnswerConfidence, list[Candidate]]:
    """Fit the confidence model on whether each candidate is right, calibrate its threshold (:func:`calibrate`
    over the fitted probabilities) and return it with the candidates re-scored by it."""
    if any(not x.features for x in cands):
        raise ValueError("a run row has no features (made before they were recorded, or with a chat model)")
    model = fit([x.features for x in cands], [x.correct for x in cands], c=c)
    rescored = rescore(cands, model)
    cal = calibrate(rescored, thresholds(rescored))
    return model.with_threshold(cal["threshold"]), rescored


def rescore(cands: Sequence[Candidate], model: AnswerConfidence) -> list[Candidate]:
    """The candidates with their confidence recomputed by ``model`` from their recorded features."""
    return [replace(x, confidence=round(model.probability(x.features), 4)) for x in cands]


def thresholds(cands: Sequence[Candidate]) -> list[float]:
    """Every threshold that changes a decision (the candidates' confidences), plus 0 and one above them all."""
    return sorted({0.0, 1.01, *(x.confidence for x in cands)})


def scored_at(cands: Sequence[Candidate], threshold: float) -> list[ScoredSample]:
    out = []
    for c in cands:
        pred = as_is(c.candidate) if c.confidence >= threshold else NOT_ANSWERABLE
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
