"""Page retrieval on MMLongBench-Doc: bm25 / dense / rrf at K = 5 beside the Trident paper's BGE-M3 row.

    .venv/bin/python benchmarks/retrieval.py --index /work/idx/mmlb --split-file benchmarks/data/mmlb_doc_split.json
    .venv/bin/python benchmarks/retrieval.py --index IDX --build --data ../shared/data/mmlongbench-doc  # index first

Each pool answers every answerable question with gold pages, per document (pool M = 20):
Recall, Precision, F1, MRR and nDCG at K = 5, Recall@20 and seconds per query. With --build, the
documents are indexed first (resumable) and indexing throughput (pages/s) is reported; the index's
documents, pages and bytes per page always are. With --split-file (benchmarks/data/mmlb_doc_split.json),
each pool is also scored on the questions of each split's documents: a setting chosen on "calib" is
reported on "test". The paper's numbers are on all 134 documents (830 answerable questions);
ours on the public 93-document subset: comparable protocol, not the same sample.

Recorded (results/retrieval.json) when every document of the samples file is in the index.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _results import write_result

from trident_local.evaluate.mmlongbench import load_samples, resolve_records
from trident_local.evaluate.retrieval_run import run_retrieval
from trident_local.index import Index

PAPER = {"bge-m3 (paper, 134 docs)": {"f1@5": 0.254, "mrr": 0.524, "recall@20": 0.86},
         "colpali (paper, 134 docs)": {"f1@5": 0.332, "mrr": 0.692}}
KEYS = ["n", "recall@5", "precision@5", "f1@5", "mrr", "ndcg@5", "recall@20"]


def result_table(result: dict) -> dict:
    """The printed table: one row per pool (and split), then the paper's rows."""
    rows = [[pool] + [str(s[k]) if k == "n" else f"{s.get(k, float('nan')):.3f}" for k in KEYS]
            for pool, s in result["pools"].items()]
    rows += [[name] + [f"{s[k]:.3f}" if k in s else "" for k in KEYS] for name, s in PAPER.items()]
    ix = result["index"]
    notes = (f"Index: {ix['documents']} documents, {ix['pages']} pages, {ix['bytes'] / 1e6:.1f} MB "
             f"({ix['bytes_per_page'] / 1e3:.1f} kB/page).")
    if "indexing" in result:
        notes += f" Indexing: {result['indexing']['pages_per_s']:.2f} pages/s."
    spq = {p: s["seconds_per_query"] for p, s in result["pools"].items() if "seconds_per_query" in s}
    if spq:
        notes += " Seconds per query: " + ", ".join(f"{p} {v * 1e3:.1f} ms" for p, v in spq.items()) + "."
    n = result.get("questions", next(iter(result["pools"].values()))["n"])
    return {"title": f"MMLongBench-Doc (93-doc public subset), {n} answerable questions with gold pages, "
                     f"K = {result['k']}, pool M = 20",
            "columns": ["setting", *KEYS], "rows": rows, "notes": notes}


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/mmlongbench-doc")
    ap.add_argument("--build", action="store_true", help="index the documents first (resumes)")
    ap.add_argument("--pools", default="bm25,dense,rrf")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--split-file", type=Path, default=None, help="also score per split of this document split")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args()

    result: dict = {"dataset": "MMLongBench-Doc, public 93-document subset", "k": args.k, "pools": {}}
    if args.build:
        idx = Index.create(args.index)
        t0 = time.perf_counter()
        rep = idx.add([args.data / "documents"])
        secs = time.perf_counter() - t0
        result["indexing"] = {"pages": rep.pages_indexed, "seconds": secs,
                              "pages_per_s": rep.pages_indexed / secs if secs else 0.0,
                              "failed": [f.error for f in rep.failed]}
    idx = Index.open(args.index)
    pages = sum(e.n_pages for e in idx.store.entries())
    result["index"] = {"documents": len(idx.store.doc_ids()), "pages": pages,
                       "bytes": dir_size(args.index), "bytes_per_page": dir_size(args.index) / max(pages, 1)}
    rep = resolve_records(load_samples(args.data / "samples.json"), idx.store)
    result["skipped_bad_pages"] = [list(map(str, b)) for b in rep.bad_pages]
    records = [r for r in rep.records if r.answerable and r.evidence_pages]
    splits = {}
    if args.split_file is not None:
        from trident_local.evaluate.doc_split import in_split, split_docs

        splits = {name: in_split(records, split_docs(args.split_file, name)) for name in ("calib", "test")}
    for pool in args.pools.split(","):
        t0 = time.perf_counter()
        report = run_retrieval(idx, records, pool=pool, k=args.k)
        report.summary["seconds_per_query"] = (time.perf_counter() - t0) / max(report.summary["n"], 1)
        result["pools"][pool] = report.summary
        for name, recs in splits.items():
            result["pools"][f"{pool} ({name} split)"] = run_retrieval(idx, recs, pool=pool, k=args.k).summary

    result["questions"] = len(records)
    tab = result_table(result)
    print(f"\n{tab['title']}")
    print(f"{'setting':28s}" + "".join(f"{k:>13s}" for k in KEYS))
    for row in tab["rows"]:
        print(f"{row[0]:28s}" + "".join(f"{v:>13s}" for v in row[1:]))
    ix = result["index"]
    print(f"\nindex: {ix['documents']} documents, {ix['pages']} pages, {ix['bytes'] / 1e6:.1f} MB "
          f"({ix['bytes_per_page'] / 1e3:.1f} kB/page)")
    if "indexing" in result:
        print(f"indexing: {result['indexing']['pages_per_s']:.2f} pages/s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.out}")
    missing = sorted(rep.missing_docs)
    write_result("retrieval", result, tab, args=args, full=not missing,
                 why_not=f"{len(missing)} documents of the samples file are not in the index")


if __name__ == "__main__":
    main()
