"""What the evidence pipeline adds to a search, and what regions add to a no-model ask.

    .venv/bin/python benchmarks/pipeline_cost.py --index /work/idx/fb \\
        --dataset ../shared/data/financebench-dev/dataset.json

For each answerable question (inside its own document), in rotating order in one process, after one
untimed warm-up search: the pool alone (``Index.search``, the fused pool read 20 deep, what `trident
search` did before the pipeline), the pipeline without regions (pool + lead-page finders: the pages an
ask reads), the pipeline as `trident search` runs it (K = 5, regions attached; each page's row vectors
cached from an earlier search: "warm") and the same with the row-vector and layout caches cleared
("cold"); and, as the baseline, `trident search` as it ran before the pipeline (the pool read 5 deep,
the line-items finder on those pages, regions; warm). Then one no-model ask per question (``--profile none`` equivalent, no self-check) and its
``regions`` timing. Reported: medians and 90th percentiles in ms, and the pipeline's median addition
over the pool alone (paired per question).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _results import write_result  # noqa: E402

from trident_local import AskOptions, ask, search  # noqa: E402
from trident_local.evaluate.mmlongbench import load_samples, resolve_records  # noqa: E402
from trident_local.generate.statement_search import LineItemFinder  # noqa: E402
from trident_local.index import Index  # noqa: E402
from trident_local.query import Query  # noqa: E402
from trident_local.regions import attach  # noqa: E402
from trident_local.regions.attach import search_regions  # noqa: E402
from trident_local.retrieve.base import Hit  # noqa: E402

MODES = ("pool", "finders", "before", "warm", "cold")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def one(index: Index, mode: str, question: str, doc_id: str) -> float:
    if mode == "cold":
        attach.row_vectors.cache_clear()
        attach._layout.cache_clear()
    elif mode in ("warm", "before"):  # the pages' layouts and row vectors from an earlier search
        search(index, question, doc=[doc_id], k=5)
    t0 = time.perf_counter()
    if mode == "pool":
        index.search(Query(question), doc=[doc_id], k=20)
    elif mode == "before":  # `trident search` before the pipeline: the pool 5 deep, the finder on those
        q = Query(question)
        hits = index.search(q, doc=[doc_id], k=5)
        leads = {lead.key for lead in LineItemFinder().find(index, q, hits)}
        ranked = [*(Hit(*key, hits[0].score) for key in leads), *(h for h in hits if h.key not in leads)][:5]
        search_regions(index, q, ranked)
    else:
        search(index, question, doc=[doc_id], k=5, regions=mode != "finders")
    return 1000 * (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--dataset", type=Path, default=ROOT.parent / "shared/data/financebench-dev/dataset.json")
    ap.add_argument("--questions", type=int, default=None, help="only the first N (default: all)")
    args = ap.parse_args()
    index = Index.open(args.index)
    index.models.use_profile("chat", "none")
    recs = [r for r in resolve_records(load_samples(args.dataset), index.store).records if r.answerable]
    recs = recs[:args.questions] if args.questions else recs
    search(index, recs[0].question, k=5)  # models loaded, pools read
    ms: dict[str, list[float]] = {m: [] for m in MODES}
    for i, r in enumerate(recs):
        for mode in MODES[i % len(MODES):] + MODES[:i % len(MODES)]:
            ms[mode].append(one(index, mode, r.question, r.doc_id))
    regions = []
    for r in recs:
        res = ask(index, r.question, AskOptions(verify=False), doc=[r.doc_id])
        regions.append(1000 * res.timings.get("regions", 0.0))
    added = {m: [x - p for x, p in zip(ms[m], ms["pool"], strict=True)] for m in MODES[1:]}
    figures = {"questions": len(recs), "dataset": str(args.dataset),
               **{f"{m}_p50_ms": statistics.median(v) for m, v in ms.items()},
               **{f"{m}_p90_ms": pct(v, 0.9) for m, v in ms.items()},
               **{f"{m}_added_p50_ms": statistics.median(v) for m, v in added.items()},
               "ask_regions_p50_ms": statistics.median(regions), "ask_regions_p90_ms": pct(regions, 0.9)}
    rows = [[m, f"{statistics.median(ms[m]):.1f}", f"{pct(ms[m], 0.9):.1f}",
             "" if m == "pool" else f"{statistics.median(added[m]):+.1f}"] for m in MODES]
    rows.append(["no-model ask: regions", f"{figures['ask_regions_p50_ms']:.1f}",
                 f"{figures['ask_regions_p90_ms']:.1f}", ""])
    tab = {"title": f"Evidence pipeline cost per search, {len(recs)} questions of {args.dataset.parent.name}",
           "columns": ["step", "p50 ms", "p90 ms", "added to the pool alone, p50 ms"], "rows": rows,
           "notes": "pool: Index.search 20 deep; finders: + lead-page finders, no regions (an ask's pages); "
                    "before: `trident search` before the pipeline (pool 5 deep + finder + regions, warm); "
                    "warm / cold: `trident search` K = 5 with regions, row vectors cached / not."}
    for row in [tab["columns"], *rows]:
        print(" | ".join(f"{c:>22s}" for c in row))
    write_result("pipeline_cost", figures, tab, args=args, full=args.questions is None)


if __name__ == "__main__":
    main()
