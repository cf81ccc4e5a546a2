"""Calibrate the no-model answer's confidence on a calib-split run, and apply it to a test run.

    trident eval qa --index /work/idx/mmlb --dataset samples.json --split-file benchmarks/data/mmlb_doc_split.json \\
        --split calib --profile none --no-verify --run calib.jsonl
    trident eval qa ... --split test ... --run test.jsonl
    .venv/bin/python benchmarks/calibrate_abstention.py calib.jsonl --fit --test test.jsonl \\
        --save-params conf.json

Each run row keeps the answer before the threshold (``candidate``), its ``confidence`` and the
``features`` the confidence is computed from. Without --fit the runs' own confidences are kept
and only the threshold with the best accuracy on the calib run is chosen. With --fit the
confidence model (logistic weights over the features each row records,
trident_local/generate/answer_confidence.py; every weight >= 0, fitted on whether each calib
candidate is right) is fitted on the calib run first, then its threshold is swept on the same
run (best accuracy, then F1, then the lowest); --save-params writes both (paste them into
CONFIDENCE in trident_local/generate/evidence_answer.py to ship them). With --test, the test
run is re-scored with the calib model and threshold (its candidates and features are in the
run, so nothing is answered again) at that one threshold only, next to answering "Not
answerable" everywhere: the test run is only scored, never searched. --out also writes the
JSON elsewhere.

Recorded (results/calibrate_abstention.json) with --fit and --test on a calib run of at least
100 questions.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result  # noqa: E402


def load(path: str) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]


def main(argv: list[str] | None = None) -> int:
    from trident_local.evaluate.abstention import calibrate, candidates, refit, rescore, sweep, thresholds

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("calib_run", help="eval qa --run JSONL of the calib split")
    ap.add_argument("--test", help="eval qa --run JSONL of the test split: scored with what calib gives")
    ap.add_argument("--fit", action="store_true", help="fit the confidence model's weights on calib first")
    ap.add_argument("--c", type=float, default=1.0, help="inverse L2 strength of the fit (default 1)")
    ap.add_argument("--save-params", help="with --fit: write the fitted model and threshold as JSON here")
    ap.add_argument("--out", help="write the result JSON here")
    args = ap.parse_args(argv)
    cal_cands = candidates(load(args.calib_run))
    model = None
    if args.fit:
        model, cal_cands = refit(cal_cands, c=args.c)
        print(f"fitted on {len(cal_cands)} calib questions ({model.calibration['correct']} right candidates): "
              f"weights {dict(model.weights)}, bias {model.bias}")
    cal = calibrate(cal_cands, thresholds(cal_cands))
    b = cal["best"]
    print(f"calib ({cal['n']} questions): threshold {cal['threshold']:.4f} -> accuracy {b['accuracy']:.3f}, "
          f"F1 {b['f1']:.3f}, unanswerable {b['unanswerable']}")
    never = cal["curve"][0]
    print(f"calib at threshold 0 (never abstain): accuracy {never['accuracy']:.3f}, F1 {never['f1']:.3f}")
    out = {"calib_run": args.calib_run, "threshold": cal["threshold"], "calib": b, "calib_curve": cal["curve"]}
    if model is not None:
        model = model.with_threshold(cal["threshold"])
        out["model"] = model.to_dict()
        if args.save_params:
            Path(args.save_params).write_text(json.dumps(model.to_dict(), indent=1) + "\n", encoding="utf-8")
    if args.test:
        test = candidates(load(args.test))
        if model is not None:
            test = rescore(test, model)
        t = sweep(test, [cal["threshold"]])[0]
        na = sweep(test, [2.0])[0]  # everything abstains
        print(f"test ({len(test)} questions) at {cal['threshold']:.4f}: accuracy {t['accuracy']:.3f}, "
              f"F1 {t['f1']:.3f}, unanswerable {t['unanswerable']}")
        print(f"test, 'Not answerable' everywhere: accuracy {na['accuracy']:.3f}, F1 {na['f1']:.3f}")
        out.update(test_run=args.test, test=t, test_all_not_answerable=na)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")

    def row(name: str, n: int, s: dict) -> list[str]:
        u = s["unanswerable"]
        f3 = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        return [name, str(n), f"{s['threshold']:.4f}", f3(s["accuracy"]), f3(s["f1"]),
                f"{f3(u.get('precision'))} / {f3(u.get('recall'))}" if isinstance(u, dict) else str(u)]

    write_result("calibrate_abstention", out, lambda: {
        "title": f"No-model answer abstention, threshold {cal['threshold']:.4f} chosen on calib"
                 + (" after fitting the confidence model" if model is not None else ""),
        "columns": ["run", "questions", "threshold", "accuracy", "F1", "unanswerable P / R"],
        "rows": [row("calib, chosen threshold", cal["n"], b), row("calib, never abstain", cal["n"], never)]
        + ([row("test, calib threshold", len(test), t), row("test, 'Not answerable' everywhere", len(test), na)]
           if args.test else []),
        "notes": f"Fitted weights {dict(model.weights)}, bias {model.bias}." if model is not None else "",
    }, args=args, argv=argv, full=bool(args.fit and args.test) and cal["n"] >= 100,
        why_not="not --fit with --test on a calib run of at least 100 questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
