"""Citation-verification metrics: pure functions over (instance label, system decision) outcomes.

Every metric is a ratio of sums over instances, so each one is defined by what an
instance adds to its numerator and denominator (:func:`contributions`); the
document-cluster bootstrap then resamples whole documents and recomputes the
ratios exactly (:func:`bootstrap_ci`).

Definitions (an instance is one claim cited to one page; "predicted supported" =
the merged verdict on the cited page is "supported"; after repair a citation
"remains" when the action is keep, flag, fix-region or fix-page, and it points at the
cited page, or at ``new_page`` after fix-page; it is "correct" when the claim is true
(label supported or wrong_location) and the page it points at is a gold page):

- binary_accuracy: predicted supported == (label is supported), over all instances;
- supported_recall: predicted supported, over supported instances;
- wrong_location_recall: predicted not supported, over wrong_location instances;
- unsupported_recall: predicted not supported, over unsupported instances;
- precision_before: correct citations / all citations before repair (= share of
  supported instances);
- precision_after: correct remaining citations / remaining citations;
- retention: supported instances whose citation remains correct;
- coverage: error instances (wrong_location, unsupported) whose citation was acted
  on (fix-page or remove) or flagged for the user; ``coverage_strict`` counts only
  fix-page and remove;
- fix_reach: wrong_location instances with a gold page within ``window`` of the
  cited page ("window-reachable") that were fixed to exactly a gold page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

SUPPORTED, WRONG_LOCATION, UNSUPPORTED = "supported", "wrong_location", "unsupported"
KEEP, FIX_PAGE, REMOVE, FLAG, FIX_REGION = "keep", "fix-page", "remove", "flag", "fix-region"
ON_CITED_PAGE = (KEEP, FLAG, FIX_REGION)  # actions that leave the citation on its page

METRICS: tuple[str, ...] = (
    "binary_accuracy",
    "supported_recall",
    "wrong_location_recall",
    "unsupported_recall",
    "precision_before",
    "precision_after",
    "retention",
    "coverage",
    "coverage_strict",
    "fix_reach",
)


@dataclass
class Outcome:
    """One instance's label and what the verifier decided about it."""

    instance_id: str
    doc: str
    label: str  # supported | wrong_location | unsupported
    cited_page: int
    gold_pages: list[int]
    verdict: str  # merged verdict on the cited page
    action: str  # keep | fix-region | fix-page | remove | flag
    new_page: int | None = None
    n_pages: int = 0
    flags: list[str] = field(default_factory=list)
    location: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def remains(o: Outcome) -> bool:
    return o.action in ON_CITED_PAGE or (o.action == FIX_PAGE and o.new_page is not None)


def final_page(o: Outcome) -> int | None:
    if o.action == FIX_PAGE:
        return o.new_page
    return o.cited_page if o.action in ON_CITED_PAGE else None


def correct_after(o: Outcome) -> bool:
    return remains(o) and o.label in (SUPPORTED, WRONG_LOCATION) and final_page(o) in o.gold_pages


def window_reachable(o: Outcome, window: int) -> bool:
    """Is a gold page within ``window`` of the cited page (and inside the document when n_pages is known)?"""
    return any(0 < abs(g - o.cited_page) <= window and (o.n_pages <= 0 or 1 <= g <= o.n_pages)
               for g in o.gold_pages)


def contributions(o: Outcome, window: int = 2) -> dict[str, tuple[float, float]]:
    """(numerator, denominator) that one outcome adds to each metric of METRICS."""
    pred = o.verdict == SUPPORTED
    is_sup, is_wl, is_un = o.label == SUPPORTED, o.label == WRONG_LOCATION, o.label == UNSUPPORTED
    err = is_wl or is_un
    reach = is_wl and window_reachable(o, window)
    return {
        "binary_accuracy": (float(pred == is_sup), 1.0),
        "supported_recall": (float(is_sup and pred), float(is_sup)),
        "wrong_location_recall": (float(is_wl and not pred), float(is_wl)),
        "unsupported_recall": (float(is_un and not pred), float(is_un)),
        "precision_before": (float(is_sup), 1.0),
        "precision_after": (float(correct_after(o)), float(remains(o))),
        "retention": (float(is_sup and correct_after(o)), float(is_sup)),
        "coverage": (float(err and o.action != KEEP), float(err)),
        "coverage_strict": (float(err and o.action in (FIX_PAGE, REMOVE)), float(err)),
        "fix_reach": (float(reach and o.action == FIX_PAGE and o.new_page in o.gold_pages), float(reach)),
    }


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def compute_metrics(outcomes: Sequence[Outcome], window: int = 2) -> dict[str, float | None]:
    """Every metric of METRICS over ``outcomes`` (None where its denominator is 0)."""
    sums = {m: [0.0, 0.0] for m in METRICS}
    for o in outcomes:
        for m, (a, b) in contributions(o, window).items():
            sums[m][0] += a
            sums[m][1] += b
    return {m: _ratio(a, b) for m, (a, b) in sums.items()}


def binary_accuracy(outcomes: Sequence[Outcome]) -> float | None:
    return compute_metrics(outcomes)["binary_accuracy"]


def fix_reach(outcomes: Sequence[Outcome], window: int = 2) -> float | None:
    return compute_metrics(outcomes, window)["fix_reach"]


def bootstrap_ci(
    outcomes: Sequence[Outcome], window: int = 2, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, tuple[float, float] | None]:
    """Percentile CIs from a document-cluster bootstrap: resample documents with replacement.

    Each replicate draws as many documents as there are, with replacement, and
    recomputes every ratio from the drawn documents' numerators and denominators
    (replicates where a denominator is 0 are left out of that metric's percentiles).
    """
    docs = sorted({o.doc for o in outcomes})
    if not docs:
        return {m: None for m in METRICS}
    d_index = {d: i for i, d in enumerate(docs)}
    num = np.zeros((len(docs), len(METRICS)))
    den = np.zeros((len(docs), len(METRICS)))
    for o in outcomes:
        for k, m in enumerate(METRICS):
            a, b = contributions(o, window)[m]
            num[d_index[o.doc], k] += a
            den[d_index[o.doc], k] += b
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(docs), size=(n_boot, len(docs)))
    weights = np.zeros((n_boot, len(docs)))
    np.add.at(weights, (np.repeat(np.arange(n_boot), len(docs)), draws.ravel()), 1.0)
    bn, bd = weights @ num, weights @ den
    lo_q, hi_q = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    out: dict[str, tuple[float, float] | None] = {}
    for k, m in enumerate(METRICS):
        ok = bd[:, k] > 0
        if not ok.any():
            out[m] = None
            continue
        vals = bn[ok, k] / bd[ok, k]
        out[m] = (float(np.percentile(vals, lo_q)), float(np.percentile(vals, hi_q)))
    return out


def counts(outcomes: Sequence[Outcome], window: int = 2) -> dict[str, Any]:
    """Instance counts behind the metrics (by label, action, and window-reachable wrong locations)."""
    by_label: dict[str, int] = {}
    by_action: dict[str, dict[str, int]] = {}
    for o in outcomes:
        by_label[o.label] = by_label.get(o.label, 0) + 1
        by_action.setdefault(o.label, {}).setdefault(o.action, 0)
        by_action[o.label][o.action] += 1
    return {
        "instances": len(outcomes),
        "documents": len({o.doc for o in outcomes}),
        "by_label": by_label,
        "actions_by_label": by_action,
        "window_reachable_wrong_location": sum(1 for o in outcomes if o.label == WRONG_LOCATION
                                               and window_reachable(o, window)),
    }
