"""Calibrate the no-model answer's abstention threshold on a calib-split run, and apply it to a test run.

    trident eval qa --index /work/idx/mmlb --dataset samples.json --split-file benchmarks/data/mmlb_doc_split.json \
        --split calib --profile none --no-verify --run calib.jsonl
    .venv/bin/python benchmarks/calibrate_abstention.py calib.jsonl [--test test.jsonl]

The threshold with the best accuracy on the calib run is printed (with the sweep);
with --test, the test run is re-scored at that threshold (its candidates and
confidences are in the run, so the answers need not be recomputed). The test run is
only scored at the calibrated threshold, never searched.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def load(path: str) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]


def main(argv: list[str] | None = None) -> int:
    from trident_local.evaluate.abstention import calibrate, candidates, sweep

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("calib_run", help="eval qa --run JSONL of the calib split")
    ap.add_argument("--test", help="eval qa --run JSONL of the test split: scored at the calibrated threshold")
    ap.add_argument("--out", help="write the result JSON here")
    args = ap.parse_args(argv)
    cal = calibrate(candidates(load(args.calib_run)))
    b = cal["best"]
    print(f"calib ({cal['n']} questions): threshold {cal['threshold']:.2f} -> accuracy {b['accuracy']:.3f}, "
          f"F1 {b['f1']:.3f}, unanswerable {b['unanswerable']}")
    never = cal["curve"][0]
    print(f"calib at threshold 0 (never abstain): accuracy {never['accuracy']:.3f}, F1 {never['f1']:.3f}")
    out = {"calib_run": args.calib_run, "threshold": cal["threshold"], "calib": b, "calib_curve": cal["curve"]}
    if args.test:
        test = candidates(load(args.test))
        t = sweep(test, [cal["threshold"]])[0]
        na = sweep(test, [2.0])[0]  # everything abstains
        print(f"test ({len(test)} questions) at {cal['threshold']:.2f}: accuracy {t['accuracy']:.3f}, F1 {t['f1']:.3f}, "
              f"unanswerable {t['unanswerable']}")
        print(f"test, 'Not answerable' everywhere: accuracy {na['accuracy']:.3f}, F1 {na['f1']:.3f}")
        out.update(test_run=args.test, test=t, test_all_not_answerable=na)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
