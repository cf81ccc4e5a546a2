"""How likely a no-model answer is right: a logistic model over what the answer was found with.

The evidence-first answer records a few features of its candidate (see
:func:`trident_local.generate.evidence_answer._features`): the share of the question's
terms in the supporting passage (``lex``) and on the pages at all (``coverage``), the
passage's embedding cosine (``cos``), whether a typed value was found (``typed``),
whether it came from a table row and column or a computation (``table``), and whether a
question word sits right next to the value (``adjacent``). A logistic regression fitted
on the calib half of a document split (:func:`fit`) turns them into P(correct), and the
threshold below which the answer abstains is the one with the best accuracy on that same
half (:mod:`trident_local.evaluate.abstention`). Refit with
``benchmarks/calibrate_abstention.py --fit``; the shipped values and how they were
obtained are :data:`trident_local.generate.evidence_answer.CONFIDENCE`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trident_local.logistic import LogisticParams

FEATURES = ("lex", "cos", "coverage", "typed", "table", "adjacent")


class AnswerConfidence(LogisticParams):
    """Logistic weights over :data:`FEATURES`, the abstention threshold, and where they came from."""

    def with_threshold(self, threshold: float) -> AnswerConfidence:
        return AnswerConfidence(dict(self.weights), self.bias, threshold, dict(self.calibration))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AnswerConfidence:
        unknown = set(d["weights"]) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown confidence features {sorted(unknown)}; known: {', '.join(FEATURES)}")
        return super().from_dict(d)


def fit(features: Sequence[Mapping[str, float]], correct: Sequence[bool], *, c: float = 1.0) -> AnswerConfidence:
    """L2-regularised logistic regression of ``correct`` on the features, with every weight >= 0 (threshold left
    at 0.5: calibrate it on the fitted probabilities). Needs both outcomes among the rows.

    Each feature is built so that more of it is more evidence (more of the question on the page, a typed value,
    a table cell, a question word beside the value); a negative weight fitted on a few dozen right answers is
    noise that would, for instance, make every table-cell answer abstain, so the weights are bounded at 0."""
    import numpy as np
    from scipy.optimize import minimize

    if len(features) != len(correct) or not features:
        raise ValueError("fit needs one outcome per feature row, and at least one row")
    if len(set(map(bool, correct))) < 2:
        raise ValueError("fit needs both right and wrong answers among the rows")
    x = np.array([[float(f.get(k, 0.0)) for k in FEATURES] for f in features])
    y = np.array([float(bool(v)) for v in correct])

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ theta[1:] + theta[0]
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))
        nll = float(np.sum(np.logaddexp(0.0, z) - y * z)) + 0.5 / c * float(theta[1:] @ theta[1:])
        g = p - y
        return nll, np.concatenate([[g.sum()], x.T @ g + theta[1:] / c])

    bounds = [(None, None)] + [(0.0, None)] * len(FEATURES)
    res = minimize(loss, np.zeros(len(FEATURES) + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    weights = {k: round(float(w), 4) for k, w in zip(FEATURES, res.x[1:], strict=True)}
    return AnswerConfidence(weights, round(float(res.x[0]), 4), 0.5,
                            {"rows": len(features), "correct": int(y.sum()), "C": c, "weights": ">= 0"})
