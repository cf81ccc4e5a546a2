"""Dense window settings A/B on both development sets: which window change helps, which hurts.

    .venv/bin/python benchmarks/dense_windows.py --set mmlongbench-doc=IDX_MM --set financebench-dev=IDX_FB

Each IDX is an index of that set's documents (`trident index`). For every variant the pages the
index parsed are cut into windows again, embedded with the index's embedder, and each question is
answered inside its own document (a page scores its best window), dense alone and fused with the
index's BM25 as the default pool fuses them. Variants, one change at a time from the first, which is
the setting of the dense pool before the three changes this compares:

- ``words160/120``: 160-word windows every 120 words (40 words of overlap), every word;
- ``words160/160``: the same windows side by side (no overlap; optional, ``--variants``);
- ``tokens128``: windows cut at 128 of the embedder's tokens, every word;
- ``tokens128-nostop``: the same without English function words (the current default).

Recall@5 and MRR (over the top 5, as `eval retrieval` scores it) per set, with the windows each
variant embeds. Recorded in
results/dense_windows.json when both sets are given with the three default variants.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _results import write_result

from trident_local.evaluate.mmlongbench import load_samples, resolve_records
from trident_local.evaluate.retrieval_metrics import mrr, recall_at
from trident_local.evaluate.retrieval_run import answerable
from trident_local.index import Index
from trident_local.query import Query
from trident_local.retrieve.base import Hit
from trident_local.retrieve.bm25 import page_passage
from trident_local.retrieve.fused import WEIGHTS, z_fuse
from trident_local.windows import WindowSpec

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DATASETS = {"mmlongbench-doc": DATA / "mmlongbench-doc" / "samples.json",
            "financebench-dev": DATA / "financebench-dev" / "dataset.json"}
VARIANTS = {"words160/120": WindowSpec(160, 120, 0, False), "words160/160": WindowSpec(160, 160, 0, False),
            "tokens128": WindowSpec(160, 160, 128, False), "tokens128-nostop": WindowSpec(160, 160, 128, True)}


DEFAULT = ("words160/120", "tokens128", "tokens128-nostop")  # the three changes, in the order they came


def page_scores(idx: Index, doc_id: str, spec: WindowSpec, qvecs: np.ndarray) -> tuple[dict[int, np.ndarray], int]:
    """Per page, its best window's cosine for every question vector; and the windows embedded."""
    emb = idx.models.embedder
    if spec == idx.store.config.windows():  # the index's own windows: its stored vectors
        d = idx.store.doc_dir(doc_id)
        vecs, pages_arr = np.load(d / "dense.npy").astype(np.float32), np.load(d / "dense_pages.npy")
        return best_per_page(vecs @ qvecs.T, pages_arr.tolist()), len(pages_arr)
    doc = idx.store.document(doc_id)
    texts, pages = [], []
    for p in doc.pages:
        for w in spec.cut(page_passage(p), emb):
            texts.append(w)
            pages.append(p.number)
    if not texts:
        return {}, 0
    # stored as the index stores them (float16), so the current setting scores alike either way
    vecs = emb.encode(texts, kind="passage").astype(np.float16).astype(np.float32)
    return best_per_page(vecs @ qvecs.T, pages), len(texts)


def best_per_page(sims: np.ndarray, pages: list[int]) -> dict[int, np.ndarray]:
    """(windows, questions) similarities -> per page, its best window's row."""
    out: dict[int, np.ndarray] = {}
    for row, page in enumerate(pages):
        out[page] = np.maximum(out[page], sims[row]) if page in out else sims[row]
    return out


def summary(rows: list[tuple[float, float]]) -> dict[str, float]:
    r5, rr = np.mean(rows, axis=0).round(4).tolist()
    return {"recall@5": r5, "mrr": rr}


def run_set(idx: Index, dataset: Path, variants: dict[str, WindowSpec]) -> dict:
    records = answerable(resolve_records(load_samples(dataset), idx.store).records)
    by_doc: dict[str, list] = {}
    for r in records:
        by_doc.setdefault(r.doc_id, []).append(r)
    bm25 = idx.pool("bm25")
    emb = idx.models.embedder
    res: dict = {}
    for name, spec in variants.items():
        t0, n_windows, dense_m, fused_m = time.perf_counter(), 0, [], []
        for doc_id, recs in by_doc.items():
            qvecs = np.stack([Query(r.question).vector(emb) for r in recs]).astype(np.float32)
            scores, n = page_scores(idx, doc_id, spec, qvecs)
            n_windows += n
            for j, r in enumerate(recs):
                gold = set(r.evidence_pages)
                dense = sorted(scores, key=lambda p: -scores[p][j])[:100]
                lex = bm25.retrieve(Query(r.question), k=100, doc_ids=[doc_id])
                dense_hits = [Hit(doc_id, p, float(scores[p][j]), "dense") for p in dense]
                fused = [h.page for h in z_fuse([lex, dense_hits], [WEIGHTS["bm25"], WEIGHTS["dense"]])]
                dense_m.append((recall_at(dense, gold, 5), mrr(dense[:5], gold)))
                fused_m.append((recall_at(fused, gold, 5), mrr(fused[:5], gold)))
        res[name] = {"questions": len(dense_m), "windows": n_windows, "seconds": time.perf_counter() - t0,
                     "dense": summary(dense_m), "fused": summary(fused_m)}
        print(f"{dataset.parent.name} {name}: {res[name]}", flush=True)
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", required=True, metavar="NAME=INDEX",
                    help=f"a development set and its index; NAME one of {', '.join(DATASETS)}")
    ap.add_argument("--variants", default=",".join(DEFAULT), help=f"any of {', '.join(VARIANTS)}")
    args = ap.parse_args(argv)
    variants = {v: VARIANTS[v] for v in args.variants.split(",")}
    figures = {}
    for item in args.set:
        name, _, path = item.partition("=")
        figures[name] = run_set(Index.open(Path(path)), DATASETS[name], variants)

    def table() -> dict:
        cols = [f"{s} {p} {m}" for s in figures for p in ("dense", "fused") for m in ("R@5", "MRR")]
        rows = [[v] + [f"{figures[s][v][p][m]:.3f}" for s in figures for p in ("dense", "fused")
                       for m in ("recall@5", "mrr")] + [" / ".join(str(figures[s][v]["windows"]) for s in figures)]
                for v in variants]
        return {"title": "Dense window settings, one change at a time, per-document retrieval, K = 5",
                "columns": ["variant", *cols, "windows"], "rows": rows,
                "notes": "fused: the default pool's z-score fusion with the same index's BM25."}

    tab = table()
    print(" | ".join(tab["columns"]))
    for row in tab["rows"]:
        print(" | ".join(row))
    write_result("dense_windows", figures, table, args=args, argv=argv,
                 full=len(figures) == len(DATASETS) and set(DEFAULT) <= set(variants))


if __name__ == "__main__":
    main()
