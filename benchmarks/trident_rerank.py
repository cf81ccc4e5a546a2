"""Trident on MMLongBench-Doc: pools x {raw top-K, annotated rerank}, the field ablation, extractive QA.

    .venv/bin/python benchmarks/trident_rerank.py --index /work/idx/mmlb \\
        --dataset ../shared/data/mmlongbench-doc/samples.json

Retrieval is per document on the answerable questions with gold pages (pool
M = 20, K = K_max = 5). Each pool is queried once per question; the raw top-5
and every rerank configuration score the same pool. The reranker is the
no-model fused-match one unless --profile names a chat model; the index must be
annotated (``trident annotate``) for the rerank rows to mean anything. The ablation
pools (--ablation-pools) also run every field set (caption-only, drop-caption,
drop-concepts, drop-entities, snippet-only). Unless --skip-qa, the QA run answers
every question (unanswerable ones included) on --qa-pool without and with the
rerank. The paper's numbers (paid models, all 134 documents) are printed beside ours.
--out also writes the JSON elsewhere.

Recorded (results/trident_rerank.json) without --limit, on an index holding every
document of the samples file.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_result  # noqa: E402

# Published with paid frontier models on all 134 documents (BENCHMARKS.md): (F1@K, MRR).
PAPER = {
    ("bge-m3 (dense)", "raw"): (0.254, 0.524),
    ("colpali", "raw"): (0.332, 0.692),
    ("bge-m3 (dense)", "caption-only"): (0.518, 0.692),
    ("colpali", "caption-only"): (0.554, 0.744),
    ("bge-m3 (dense)", "full"): (0.546, 0.744),
    ("colpali", "full"): (0.581, 0.788),
}
PAPER_ABLATION_F1 = {  # (BGE-M3 pool, ColPali pool)
    "full": (0.546, 0.581),
    "drop-caption": (0.416, 0.498),
    "drop-concepts": (0.515, 0.593),
    "drop-entities": (0.507, 0.588),
}
PAPER_POOL = {"dense": "bge-m3 (dense)", "colpali": "colpali"}


def available_pools(index, wanted: list[str]) -> tuple[list[str], list[str]]:
    """Pools to run, and notes on the ones left out (colpali needs a multi-vector profile and its pool)."""
    run, notes = [], []
    for p in wanted:
        if p == "colpali" and (
            index.config.multivector == "none" or "colpali" not in index.store.manifest.pools
        ):
            notes.append("colpali: not in this index (no multi-vector page embedder on CPU); skipped")
            continue
        run.append(p)
    return run, notes


def retrieval_rows(retrieval: dict, k: int, depth: int) -> list[list[str]]:
    """pool, setting, F1@k, MRR, mean K, R@depth, the paper's F1 / MRR: one row per pool and setting."""
    rows = []
    for pool, res in retrieval.items():
        for c in ("raw", "full", "caption-only"):
            if c not in res:
                continue
            s = res[c]
            paper = PAPER.get((PAPER_POOL.get(pool, ""), c))
            rows.append([pool, "raw top-5" if c == "raw" else "rerank " + c, f"{s[f'f1@{k}']:.3f}",
                         f"{s['mrr']:.3f}", f"{s['mean_k']:.2f}", f"{s[f'recall@{depth}']:.3f}",
                         f"{paper[0]:.3f} / {paper[1]:.3f}" if paper else "-"])
    return rows


def result_table(figures: dict) -> dict:
    """The retrieval table as printed (raw / full / caption-only per pool), plus the ablation and QA in notes."""
    k, depth, retrieval = figures["k"], figures["pool_depth"], figures["retrieval"]
    rows = retrieval_rows(retrieval, k, depth)
    ablation = [p for p in retrieval if "drop-caption" in retrieval[p]]
    notes = []
    if ablation:
        notes.append("Field ablation, F1@5 / MRR / mean K (" + ", ".join(ablation) + "): " + "; ".join(
            f"{c} " + ", ".join(f"{retrieval[p][c][f'f1@{k}']:.3f} / {retrieval[p][c]['mrr']:.3f} / "
                               f"{retrieval[p][c]['mean_k']:.2f}" for p in ablation)
            for c in retrieval[ablation[0]] if c not in ("raw", "retrieve_ms_per_query")) + ".")
    for rerank, s in figures.get("qa", {}).items():
        notes.append(f"QA, rerank {rerank}: accuracy {s['accuracy']:.3f}, F1 {s['f1']:.3f}, mean K {s['mean_k']:.2f}, "
                     f"{s['predicted_not_answerable']} predicted not answerable.")
    notes += [f"Note: {n}" for n in figures.get("notes", [])]
    return {"title": f"Retrieval at K = {k} (pool M = {depth}), {figures['n_answerable']} answerable questions, "
                     f"reranker {figures['reranker']}",
            "columns": ["pool", "setting", f"F1@{k}", "MRR", "mean K", f"R@{depth}", "paper F1 / MRR"],
            "rows": rows, "notes": " ".join(notes)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--pools", default="bm25,dense,rrf,xkg,colpali")
    ap.add_argument("--ablation-pools", default="dense,rrf")
    ap.add_argument("--qa-pool", default="rrf")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--pool-depth", type=int, default=20)
    ap.add_argument("--profile", default="none", help="chat profile for rerank/answers ('none' = no-model)")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only (smoke runs)")
    ap.add_argument("--skip-qa", action="store_true")
    ap.add_argument("--out", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)

    from trident_local.evaluate.mmlongbench import load_samples, resolve_records
    from trident_local.evaluate.retrieval_metrics import mean_metrics, page_metrics, recall_at
    from trident_local.generate.ask import AskOptions
    from trident_local.index import Index
    from trident_local.query import Query
    from trident_local.rerank import FIELD_SETS, rerank_pool

    index = Index.open(args.index)
    loaded = resolve_records(load_samples(args.dataset), index.store)
    records = loaded.records[: args.limit] if args.limit else loaded.records
    answerable = [r for r in records if r.answerable and r.evidence_pages]
    pools, notes = available_pools(index, [p.strip() for p in args.pools.split(",") if p.strip()])
    ablation_pools = [p for p in args.ablation_pools.split(",") if p in pools]
    index.models.use_profile("chat", args.profile)
    chat = index.models.chat
    k = args.k
    print(
        f"{len(records)} questions ({len(answerable)} answerable with gold pages); "
        f"skipped {len(loaded.bad_pages)} with gold pages beyond the document, "
        f"{sum(loaded.missing_docs.values())} of documents not in the index",
        file=sys.stderr,
    )

    retrieval: dict[str, dict[str, dict]] = {}
    for pool in pools:
        configs = ["raw", "full"] + ([f for f in FIELD_SETS if f != "full"] if pool in ablation_pools else [])
        rows: dict[str, list[dict]] = {c: [] for c in configs}
        fallbacks = dict.fromkeys(configs, 0)
        secs = {"retrieve": 0.0, **dict.fromkeys(configs[1:], 0.0)}
        t_pool = time.perf_counter()
        for i, r in enumerate(answerable):
            t0 = time.perf_counter()
            q = Query(r.question)  # embedded once for the pool and every rerank setting
            hits = index.pool(pool).retrieve(q, k=args.pool_depth, doc_ids=[r.doc_id])
            secs["retrieve"] += time.perf_counter() - t0
            gold = set(r.evidence_pages)
            pool_pages = [h.page for h in hits]
            for c in configs:
                t1 = time.perf_counter()
                if c == "raw":
                    ranked = pool_pages[:k]
                else:
                    res = rerank_pool(index, q, hits, fields=c, chat=chat, k_max=k)
                    ranked = [h.page for h in res.hits]
                    fallbacks[c] += int(res.fallback)
                    secs[c] += time.perf_counter() - t1
                m = page_metrics(ranked, gold, k)
                m[f"recall@{args.pool_depth}"] = recall_at(pool_pages, gold, args.pool_depth)
                m["k"] = float(len(ranked))
                rows[c].append(m)
            if (i + 1) % 100 == 0:
                print(
                    f"  {pool}: {i + 1}/{len(answerable)} ({time.perf_counter() - t_pool:.0f} s)",
                    file=sys.stderr,
                )
        retrieval[pool] = {}
        for c in configs:
            s = mean_metrics(rows[c])
            s["mean_k"] = s.pop("k", 0.0)
            s["n"] = len(rows[c])
            if c != "raw":
                s["rerank_fallbacks"] = fallbacks[c]
                s["rerank_ms_per_query"] = 1000 * secs[c] / max(len(rows[c]), 1)
            retrieval[pool][c] = s
        retrieval[pool]["retrieve_ms_per_query"] = 1000 * secs["retrieve"] / max(len(answerable), 1)

    reranker = "no-model:fused-match" if chat is None else f"model:{args.profile}"
    print(
        f"\nRetrieval at K = {k} (pool M = {args.pool_depth}), {len(answerable)} answerable questions, "
        f"reranker {reranker}"
    )
    print(f"{'pool':8} {'setting':20} {'F1@5':>6} {'MRR':>6} {'meanK':>6} {'R@20':>6} | paper F1 / MRR")
    for r in retrieval_rows(retrieval, k, args.pool_depth):
        print(f"{r[0]:8} {r[1]:20} {r[2]:>6} {r[3]:>6} {r[4]:>6} {r[5]:>6} | {r[6]}")
    if ablation_pools:
        print(f"\nField ablation (F1@5 / MRR / mean K), reranker {reranker}")
        print(
            f"{'fields':14} " + " ".join(f"{p:>22}" for p in ablation_pools) + " | paper F1 BGE-M3 / ColPali"
        )
        for c in FIELD_SETS:
            vals = " ".join(
                f"{retrieval[p][c][f'f1@{k}']:.3f} / {retrieval[p][c]['mrr']:.3f} / "
                f"{retrieval[p][c]['mean_k']:.2f}".rjust(22)
                for p in ablation_pools
            )
            paper = PAPER_ABLATION_F1.get(c)
            print(f"{c:14} {vals} | {f'{paper[0]:.3f} / {paper[1]:.3f}' if paper else '-'}")
    for n in notes:
        print(f"note: {n}")

    qa: dict[str, dict] = {}
    if not args.skip_qa:
        from trident_local.evaluate.qa_run import run_qa

        for rerank in ("none", "annotated"):
            t0 = time.perf_counter()
            rep = run_qa(index, records, AskOptions(pool=args.qa_pool, rerank=rerank, answer="auto"))
            qa[rerank] = {**rep.summary, "seconds": time.perf_counter() - t0}
        mode = "extractive (no model)" if chat is None else f"auto, {args.profile}"
        print(f"\nQA ({mode}), {args.qa_pool} pool, {len(records)} questions incl. unanswerable")
        print(
            f"{'rerank':10} {'acc':>6} {'F1':>6} {'meanK':>6} {'predNA':>6} "
            + " ".join(f"{f:>6}" for f in ("Int", "Float", "Str", "List", "None"))
        )
        for rerank, s in qa.items():
            per = " ".join(
                f"{s['per_format'].get(f, {}).get('accuracy', 0.0):6.3f}"
                for f in ("Int", "Float", "Str", "List", "None")
            )
            print(
                f"{rerank:10} {s['accuracy']:6.3f} {s['f1']:6.3f} {s['mean_k']:6.2f} "
                f"{s['predicted_not_answerable']:6d} {per}"
            )
        print(f"protocol: {next(iter(qa.values()))['protocol']}")

    figures = {
        "dataset": str(args.dataset),
        "index": str(args.index),
        "k": k,
        "pool_depth": args.pool_depth,
        "reranker": reranker,
        "n_questions": len(records),
        "n_answerable": len(answerable),
        "skipped_bad_pages": [list(x) for x in loaded.bad_pages],
        "notes": notes,
        "retrieval": retrieval,
        "qa": qa,
        "paper": {f"{p}|{c}": v for (p, c), v in PAPER.items()},
        "paper_ablation_f1": PAPER_ABLATION_F1,
    }
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(figures, indent=2))
        print(f"\nwrote {out}")
    write_result("trident_rerank", figures, lambda: result_table(figures), args=args, argv=argv,
                 full=not args.limit and not loaded.missing_docs,
                 why_not="--limit, or documents of the samples file missing from the index")
    return 0


if __name__ == "__main__":
    sys.exit(main())
