"""Every pool and the default search on both development distributions, with paired bootstrap intervals.

    .venv/bin/python benchmarks/fusion.py --mmlb-index /work/idx/mmlb --fb-index /work/idx/fb

For MMLongBench-Doc (public 93-document subset) and FinanceBench's development filings, each answerable
question with gold pages is searched inside its own document, as `trident eval retrieval` does:
each pool alone (``--finders none``: bm25, dense, rrf, fused) and the default, exactly what `trident
search` returns (the fused pool with the lead-page finders). Reported: Recall@5, MRR and F1@5 on the
whole set and on each half of its document split (benchmarks/data/*_doc_split.json: the halves are
whole documents), and, for the default, the difference to the best single member pool (bm25 or dense,
chosen per row) with a 95% paired bootstrap interval over questions (2,000 resamples, seed 0).

Whatever the fusion's settings were fitted on is said in docs/INDEX.md#fusion; the "test" halves were
held apart from that fitting.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _results import write_result  # noqa: E402

from trident_local.evaluate.doc_split import in_split, split_docs  # noqa: E402
from trident_local.evaluate.mmlongbench import load_samples, resolve_records  # noqa: E402
from trident_local.evaluate.retrieval_run import answerable, run_retrieval  # noqa: E402
from trident_local.index import Index  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SETS = {  # name -> (samples file, document split)
    "MMLongBench-Doc": (DATA / "mmlongbench-doc" / "samples.json", ROOT / "benchmarks/data/mmlb_doc_split.json"),
    "FinanceBench dev": (DATA / "financebench-dev" / "dataset.json",
                         ROOT / "benchmarks/data/financebench_dev_doc_split.json"),
}
POOLS = ("bm25", "dense", "rrf", "fused")
MEMBERS = ("bm25", "dense")
METRICS = ("recall@5", "mrr", "f1@5")
DEFAULT = "default search"


def paired_interval(a: np.ndarray, b: np.ndarray, *, rounds: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``a - b`` and its 95% percentile bootstrap interval, resampling questions (pairs kept)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if not len(d):
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(rounds, len(d)))].mean(axis=1)
    return float(d.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def per_question(index: Index, records, pool: str, finders: str) -> dict[int, dict[str, float]]:
    return {row.qid: row.metrics for row in run_retrieval(index, records, pool=pool, finders=finders).rows}


def score_set(index: Index, samples: Path, split_file: Path) -> dict:
    rep = resolve_records(load_samples(samples), index.store)
    records = answerable(rep.records)
    runs = {pool: per_question(index, records, pool, "none") for pool in POOLS}
    runs[DEFAULT] = per_question(index, records, "fused", "all")
    parts = {"all": [r.qid for r in records]}
    for half in ("calib", "test"):
        parts[half] = [r.qid for r in in_split(records, split_docs(split_file, half))]
    out: dict = {"questions": len(records), "missing_documents": sorted(rep.missing_docs), "parts": {}}
    for part, qids in parts.items():
        rows: dict = {}
        for name, run in runs.items():
            rows[name] = {m: float(np.mean([run[q][m] for q in qids])) if qids else 0.0 for m in METRICS}
        for m in METRICS:
            best = max(MEMBERS, key=lambda p, m=m: rows[p][m])
            mean, lo, hi = paired_interval(np.array([runs[DEFAULT][q][m] for q in qids]),
                                           np.array([runs[best][q][m] for q in qids]))
            rows[DEFAULT][f"{m} vs {best}"] = {"diff": mean, "lo": lo, "hi": hi}
        out["parts"][part] = {"n": len(qids), "rows": rows}
    return out


def table(figures: dict) -> dict:
    rows = []
    for name, res in figures["sets"].items():
        for part, p in res["parts"].items():
            for setting, r in p["rows"].items():
                cells = [f"{r[m]:.3f}" for m in METRICS]
                if setting == DEFAULT:
                    cells += [next(f"{v['diff']:+.3f} [{v['lo']:+.3f}, {v['hi']:+.3f}]"
                                   for k, v in r.items() if k.startswith(f"{m} vs")) for m in ("recall@5", "mrr")]
                else:
                    cells += ["", ""]
                rows.append([name, f"{part} ({p['n']})", setting, *cells])
    return {"title": "Every pool and the default search, per development set and document half (K = 5)",
            "columns": ["set", "questions", "setting", *METRICS, "R@5 - best member [95%]",
                        "MRR - best member [95%]"],
            "rows": rows,
            "notes": "Pools alone with the lead-page finders off; 'default search' is `trident search` at its "
                     "defaults (fused pool + line-items finder). Intervals: paired bootstrap over questions, "
                     "against the better of bm25 and dense on that row's metric."}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mmlb-index", type=Path, required=True)
    ap.add_argument("--fb-index", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args()
    figures = {"sets": {}}
    for name, index_dir in (("MMLongBench-Doc", args.mmlb_index), ("FinanceBench dev", args.fb_index)):
        samples, split_file = SETS[name]
        figures["sets"][name] = score_set(Index.open(index_dir), samples, split_file)
    tab = table(figures)
    print(tab["title"])
    for row in tab["rows"]:
        print(" | ".join(row))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))
    missing = [d for s in figures["sets"].values() for d in s["missing_documents"]]
    write_result("fusion", figures, tab, args=args, full=not missing,
                 why_not=f"{len(missing)} documents of the data sets are not in the indexes")


if __name__ == "__main__":
    main()
