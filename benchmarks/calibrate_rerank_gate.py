"""Fit the no-model rerank's confidence gate on the calib document split; report both splits at that gate.

    .venv/bin/python benchmarks/calibrate_rerank_gate.py --index /work/idx/mmlb \\
        --dataset ../shared/data/mmlongbench-doc/samples.json --split-file benchmarks/data/mmlb_doc_split.json

For each answerable question with gold pages the pool (rrf, M = 20) and the fused
scores are computed once; every (order margin, cut margin) pair is then scored
offline (``rerank/gate.py``: the fused order above the first, the adaptive-K cut
above the second). The pair kept is, among those whose Recall@5 and MRR on calib
are not below the raw pool's, the one whose smaller gain over the pool is largest
(ties: best F1@5, then the larger margins); none qualifying: never trust the fused
order. The test split is evaluated only at that pair (and at the raw pool, the
ungated reranker and the previous single-margin gate, for reference). The shipped pair
(``rerank/gate.py``) is reported beside the fitted one. Each setting: Recall@5, MRR, F1@5, mean K
and the share of questions where the fused order was used. Writes JSON to --out (default
benchmarks/results/rerank_gate.json, git-ignored).

Recorded (results/calibrate_rerank_gate.json) without --limit, on an index holding every document
of the samples file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_result  # noqa: E402

MARGINS = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, math.inf]
PAIRS = [(o, c) for o in MARGINS for c in MARGINS if c >= o]


def collect(index, records, embedder, pool: str, depth: int) -> list[dict]:
    """Per question: pool pages (best first), fused scores (pool order), gold pages."""
    from trident_local.rerank.fields import field_set
    from trident_local.rerank.fused import fused_scores
    from trident_local.rerank.records import build_records
    from trident_local.text import query_entities

    out = []
    for i, r in enumerate(records):
        hits = index.pool(pool).retrieve(r.question, k=depth, doc_ids=[r.doc_id])
        if not hits:
            out.append({"pool": [], "scores": [], "gold": r.evidence_pages})
            continue
        qvec = embedder.encode([r.question], kind="query")[0]
        recs = build_records(index.store, hits, qvec, query_entities(r.question))
        scores = fused_scores(index.store, r.question, qvec, recs, field_set("full"))
        out.append({"pool": [h.page for h in hits], "scores": [float(s) for s in scores], "gold": r.evidence_pages})
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{len(records)}", file=sys.stderr)
    return out


def evaluate(rows: list[dict], gate: tuple[float, float], k: int, mode: str = "gated") -> dict[str, float]:
    from trident_local.evaluate.retrieval_metrics import mean_metrics, page_metrics
    from trident_local.rerank.gate import choose

    ms = []
    trusted = 0
    for row in rows:
        if mode == "raw" or not row["pool"]:
            ranked = row["pool"][:k]
        else:
            picked, decision = choose(row["scores"], k, *gate)
            trusted += decision != "pool"
            ranked = [row["pool"][i] for i in picked]
        m = page_metrics(ranked, set(row["gold"]), k)
        m["k"] = float(len(ranked))
        ms.append(m)
    s = mean_metrics(ms)
    s["fused_order_used"] = trusted / len(rows) if rows else 0.0
    s["n"] = len(rows)
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--split-file", required=True)
    ap.add_argument("--pool", default="rrf")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--pool-depth", type=int, default=20)
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each split (smoke runs)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "rerank_gate.json"))
    args = ap.parse_args(argv)

    from trident_local.evaluate.doc_split import in_split, split_docs
    from trident_local.evaluate.mmlongbench import load_samples, resolve_records
    from trident_local.index import Index
    from trident_local.models.profiles import build_model
    from trident_local.rerank.gate import CUT_MARGIN, ORDER_MARGIN

    index = Index.open(args.index)
    loaded = resolve_records(load_samples(args.dataset), index.store)
    answerable = [r for r in loaded.records if r.answerable and r.evidence_pages]
    embedder = build_model("embedder", index.config.embedder)
    data = {}
    for split in ("calib", "test"):
        recs = in_split(answerable, split_docs(args.split_file, split))[: args.limit]
        print(f"{split}: {len(recs)} answerable questions", file=sys.stderr)
        data[split] = collect(index, recs, embedder, args.pool, args.pool_depth)
    k, r_key, f_key = args.k, f"recall@{args.k}", f"f1@{args.k}"
    never = (math.inf, math.inf)
    raw = evaluate(data["calib"], never, k, "raw")
    sweep = {str(p): evaluate(data["calib"], p, k) for p in PAIRS}

    def gains(p: tuple[float, float]) -> tuple[float, float]:
        s = sweep[str(p)]
        return s[r_key] - raw[r_key], s["mrr"] - raw["mrr"]

    ok = [p for p in PAIRS if min(gains(p)) >= -1e-9]
    best = max(ok, key=lambda p: (round(min(gains(p)), 9), sweep[str(p)][f_key], p)) if ok else never
    result = {"pool": args.pool, "k": k, "pool_depth": args.pool_depth, "order_margin": best[0],
              "cut_margin": best[1], "calib_sweep": sweep}
    for split in ("calib", "test"):
        result[split] = {
            "raw pool": evaluate(data[split], never, k, "raw"),
            "fused, ungated (cut always)": evaluate(data[split], (0.0, 0.0), k),
            "single margin 0.3 (cut)": evaluate(data[split], (0.3, 0.3), k),
            f"gate {best[0]} / cut {best[1]}": evaluate(data[split], best, k),
            # what users run: the shipped pair, which may differ from this index's fit
            f"shipped {ORDER_MARGIN} / cut {CUT_MARGIN}": evaluate(data[split], (ORDER_MARGIN, CUT_MARGIN), k),
        }
    print(f"gate fitted on calib: order_margin = {best[0]}, cut_margin = {best[1]}")
    for split in ("calib", "test"):
        print(f"\n{split} ({result[split]['raw pool']['n']} questions): Recall@{k} / MRR / F1@{k} / mean K / fused used")
        for name, s in result[split].items():
            print(f"  {name:30s} {s[r_key]:.3f} / {s['mrr']:.3f} / {s[f'f1@{k}']:.3f} / {s['k']:.2f} / "
                  f"{s['fused_order_used']:.2f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    write_result("calibrate_rerank_gate", result, lambda: {
        "title": f"Rerank gate fitted on calib: order_margin = {best[0]}, cut_margin = {best[1]} "
                 f"({args.pool} pool, M = {args.pool_depth}, K = {k})",
        "columns": ["split", "setting", f"Recall@{k}", "MRR", f"F1@{k}", "mean K", "fused used"],
        "rows": [[f"{split} ({result[split]['raw pool']['n']})", name, f"{s[r_key]:.3f}", f"{s['mrr']:.3f}",
                  f"{s[f_key]:.3f}", f"{s['k']:.2f}", f"{s['fused_order_used']:.2f}"]
                 for split in ("calib", "test") for name, s in result[split].items()],
        "notes": "",
    }, args=args, argv=argv, full=not args.limit and not loaded.missing_docs,
        why_not="--limit, or documents of the samples file missing from the index")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
