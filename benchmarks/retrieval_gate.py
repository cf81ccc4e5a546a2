"""The retrieval regression gate: a fixed small slice of both development sets, scored against a baseline.

    .venv/bin/python benchmarks/retrieval_gate.py            # score the slice, compare with the baseline
    .venv/bin/python benchmarks/retrieval_gate.py --update   # write the new figures as the baseline

The slice (benchmarks/data/retrieval_gate.json) is the smallest documents of each set that have
questions: 10 MMLongBench-Doc documents (146 pages, 57 questions) and 4 FinanceBench development
filings (335 pages, 4 questions), chosen by size, not by score. They are indexed from nothing with
the default settings (about a minute on 2 cores) and every pool in the file answers each question
inside its own document, as `trident eval retrieval` does (the gated default pool with the lead-page
finders, as `trident search` ranks; the others alone). The gate fails when the default pool's
Recall@5 or MRR on either set falls more than ``tolerance`` (0.02) below the committed baseline;
the other pools are reported beside it. A change that moves the figures on purpose updates the
baseline with --update, so the new numbers are a visible diff in review.

The data is read from ../shared/data (the documents are not copied into the repository);
tests/test_retrieval_gate.py runs this in CI.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from trident_local.evaluate.mmlongbench import load_samples, resolve_records
from trident_local.evaluate.retrieval_run import answerable, run_retrieval
from trident_local.index import Index

ROOT = Path(__file__).resolve().parents[1]
SLICE_FILE = ROOT / "benchmarks" / "data" / "retrieval_gate.json"
DATA = ROOT.parent / "shared" / "data"
GATED = ("recall@5", "mrr")


def load_slice(path: Path = SLICE_FILE) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def missing_data(spec: dict, data: Path = DATA) -> list[str]:
    """The slice's files not found under ``data`` (empty when the gate can run)."""
    out = []
    for ds in spec["sets"].values():
        if not (data / ds["dataset"]).is_file():
            out.append(str(data / ds["dataset"]))
        out += [str(data / ds["docs"] / n) for n in ds["documents"] if not (data / ds["docs"] / n).is_file()]
    return out


def score_slice(spec: dict, work: Path, data: Path = DATA) -> dict:
    """Index the slice's documents into ``work`` and score every pool on every set."""
    idx = Index.create(work / "index")
    pdfs = [data / ds["docs"] / n for ds in spec["sets"].values() for n in ds["documents"]]
    t0 = time.perf_counter()
    rep = idx.add(pdfs)
    if rep.failed:
        raise RuntimeError(f"the slice did not index: {[f.error for f in rep.failed]}")
    figures: dict = {"pages": rep.pages_indexed, "index_seconds": time.perf_counter() - t0, "sets": {}}
    for name, ds in spec["sets"].items():
        loaded = resolve_records(load_samples(data / ds["dataset"]), idx.store)
        records = [r for r in answerable(loaded.records) if r.doc_name in set(ds["documents"])]
        figures["sets"][name] = {"questions": len(records), "pools": {}}
        for pool in spec["pools"]:
            # the gated pool as `trident search` ranks it (its lead-page finders on), the others alone
            finders = "all" if pool == spec["gated_pool"] else "none"
            s = run_retrieval(idx, records, pool=pool, k=5, pool_depth=20, finders=finders).summary
            figures["sets"][name]["pools"][pool] = {k: round(float(s[k]), 4) for k in (*GATED, "f1@5", "recall@20")}
    return figures


def regressions(spec: dict, figures: dict) -> list[str]:
    """Each gated figure more than the tolerance below its baseline, as a sentence."""
    tol, pool, out = spec["tolerance"], spec["gated_pool"], []
    for name, base in spec["baseline"].items():
        now = figures["sets"][name]["pools"][pool]
        out += [f"{name}: {pool} {key} {now[key]:.3f} < baseline {base[key]:.3f} - {tol}"
                for key in GATED if now[key] < base[key] - tol]
    return out


def print_table(spec: dict, figures: dict) -> None:
    print(f"retrieval gate: {figures['pages']} pages indexed in {figures['index_seconds']:.0f} s")
    print(f"{'set':<18} {'pool':<7} {'n':>3} {'R@5':>6} {'MRR':>6} {'F1@5':>6} {'R@20':>6}  baseline R@5/MRR")
    for name, s in figures["sets"].items():
        for pool, m in s["pools"].items():
            base = spec["baseline"].get(name, {}) if pool == spec["gated_pool"] else {}
            ref = f"  {base['recall@5']:.3f}/{base['mrr']:.3f}" if base else ""
            print(f"{name:<18} {pool:<7} {s['questions']:>3} {m['recall@5']:>6.3f} {m['mrr']:>6.3f} "
                  f"{m['f1@5']:>6.3f} {m['recall@20']:>6.3f}{ref}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder (default: ../shared/data)")
    ap.add_argument("--update", action="store_true", help="write this run's figures as the new baseline")
    args = ap.parse_args(argv)
    spec = load_slice()
    missing = missing_data(spec, args.data)
    if missing:
        print(f"error: the gate's data is not there: {missing[:3]} ({len(missing)} files)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="trident-gate-") as tmp:
        figures = score_slice(spec, Path(tmp), args.data)
    print_table(spec, figures)
    if args.update:
        spec["baseline"] = {name: {k: s["pools"][spec["gated_pool"]][k] for k in GATED}
                            for name, s in figures["sets"].items()}
        spec["expected_questions"] = {name: s["questions"] for name, s in figures["sets"].items()}
        SLICE_FILE.write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
        print(f"baseline written to {SLICE_FILE.relative_to(ROOT)}")
        return 0
    bad = regressions(spec, figures)
    for line in bad:
        print(f"REGRESSION {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
