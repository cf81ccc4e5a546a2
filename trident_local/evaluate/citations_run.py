"""Run the verifier on built citation instances and score it (metrics + document-cluster bootstrap CIs).

With the no-model text channel, the scorer is first calibrated on the
instances of the "calib" split (documents disjoint from "test"), unless
parameters are given; the metrics are then computed on the requested split
only. The calibration (weights, threshold, data, seed) is part of the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from trident_local.errors import TridentError
from trident_local.evaluate.citations_build import SUPPORTED, Instance
from trident_local.evaluate.citations_metrics import METRICS, Outcome, bootstrap_ci, compute_metrics, counts
from trident_local.verify.types import Claim


def _check_docs(store: Any, instances: Sequence[Instance]) -> dict[str, str]:
    """Instance doc_id -> index doc_id (by id, else by file name); a clear error when a document is missing."""
    out, missing = {}, set()
    for inst in instances:
        if inst.doc_id in out:
            continue
        if inst.doc_id in store.manifest.documents:
            out[inst.doc_id] = inst.doc_id
            continue
        try:
            out[inst.doc_id] = store.resolve(inst.doc)
        except TridentError:
            missing.add(inst.doc)
    if missing:
        raise TridentError(f"{len(missing)} document(s) of the instances are not in {store.root}: "
                           f"{', '.join(sorted(missing)[:5])}{' ...' if len(missing) > 5 else ''}")
    return out


def calibrate_scorer(scorer: Any, instances: Sequence[Instance], doc_map: dict[str, str], *,
                     objective: str = "accuracy", info: dict[str, Any] | None = None) -> Any:
    """Fit the no-model scorer's weights and threshold on ``instances`` (label supported vs not)."""
    from trident_local.verify.judge_common import JudgeItem
    from trident_local.verify.judge_text import fit_params

    items = [JudgeItem(i.claim, doc_map[i.doc_id], i.cited_page) for i in instances]
    feats = scorer.features(items)
    keep = [(f, i.label == SUPPORTED) for f, i in zip(feats, instances, strict=True) if f is not None]
    if not keep:
        raise TridentError("no calibration instance has page text; cannot calibrate the no-model scorer")
    try:
        return fit_params([f for f, _ in keep], [y for _, y in keep], objective=objective,
                          info={**(info or {}), "skipped_no_text": len(instances) - len(keep)})
    except ValueError as e:
        raise TridentError(f"cannot calibrate the no-model scorer: {e}") from e


def run_citations(
    index: Any,
    instances: Sequence[Instance],
    *,
    text: str = "none",
    image: str = "none",
    window: int = 2,
    params: Any = None,
    calibrate: bool = True,
    objective: str = "accuracy",
    split: str = "test",
    n_boot: int = 1000,
    seed: int = 0,
    batch_size: int = 16,
    max_tokens: int = 160,
    chunk: int = 64,
    on_progress: Callable[[int], None] | None = None,
    regions: bool = True,
) -> dict[str, Any]:
    """Verify every instance of ``split`` ("test", "calib" or "all") and return metrics, CIs and outcomes.
    ``regions``: the region check before the page policy (off: page-level judging only)."""
    from trident_local.verify.judge_text import NoModelSupportScorer
    from trident_local.verify.pipeline import Verifier

    t0 = time.perf_counter()
    verifier = Verifier.from_index(index, text=text, image=image, window=window, params=params,
                                   batch_size=batch_size, max_tokens=max_tokens, regions=regions)
    store = verifier.store
    doc_map = _check_docs(store, instances)
    calibration: dict[str, Any] | None = None
    scorer = verifier.text_judge if isinstance(verifier.text_judge, NoModelSupportScorer) else None
    if scorer is not None:
        calib = [i for i in instances if i.split == "calib"]
        if params is None and calibrate and calib and split != "all":
            seeds = sorted({i.seed for i in calib})
            scorer.params = calibrate_scorer(scorer, calib, doc_map, objective=objective, info={
                "data": "calib split of the instances (documents disjoint from the test split)",
                "instances": len(calib), "documents": len({i.doc for i in calib}), "build_seed": seeds})
        calibration = scorer.params.to_dict()
    chosen = [i for i in instances if split == "all" or i.split == split]
    if not chosen:
        raise TridentError(f"no instances in split {split!r}")
    outcomes: list[Outcome] = []
    for b in range(0, len(chosen), chunk):
        part = chosen[b : b + chunk]
        claims = [(doc_map[i.doc_id], Claim(i.claim, [i.cited_page], claim_id=i.instance_id, source="given"))
                  for i in part]
        for inst, (res,) in zip(part, verifier.verify_claims(claims), strict=True):
            outcomes.append(Outcome(instance_id=inst.instance_id, doc=inst.doc, label=inst.label,
                                    cited_page=inst.cited_page, gold_pages=list(inst.gold_pages),
                                    verdict=res.verdict, action=res.action, new_page=res.new_page,
                                    n_pages=inst.n_pages, flags=list(res.flags), location=inst.location))
        if on_progress:
            on_progress(len(part))
    metrics = compute_metrics(outcomes, window)
    ci = bootstrap_ci(outcomes, window, n_boot=n_boot, seed=seed)
    by_location = {
        loc: compute_metrics([o for o in outcomes if o.location == loc], window)["wrong_location_recall"]
        for loc in ("window", "outside")
    }
    src = {i.instance_id: (i.evidence_sources[0] if i.evidence_sources else "unknown") for i in chosen}
    by_source = {}
    for s in sorted(set(src.values())):
        sub = [o for o in outcomes if src[o.instance_id] == s]
        by_source[s] = {"instances": len(sub), "binary_accuracy": compute_metrics(sub, window)["binary_accuracy"]}
    return {
        **{m: metrics[m] for m in METRICS},
        "ci95": {m: list(v) if v else None for m, v in ci.items()},
        "counts": counts(outcomes, window),
        "wrong_location_recall_by_location": by_location,
        "binary_accuracy_by_evidence_source": by_source,
        "config": {
            "split": split,
            "window": window,
            "regions": verifier.regions,
            "judges": verifier.judges,
            "text_profile": text,
            "image_profile": image,
            "bootstrap": {"resample": "documents", "n": n_boot, "seed": seed, "level": 0.95},
            "no_model_scorer": calibration,
        },
        "model_calls": verifier.model_calls,
        "pages_judged_per_item": verifier.pages_judged / len(chosen),
        "seconds": round(time.perf_counter() - t0, 2),
        "outcomes": [o.to_dict() for o in outcomes],
    }
