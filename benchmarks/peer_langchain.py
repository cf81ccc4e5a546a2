"""The LangChain tutorial recipe beside `trident index` + `eval retrieval`, on the same PDFs and questions.

    .venv/bin/pip install -e '.[peer]'      # LangChain, FAISS: for this script only
    .venv/bin/python benchmarks/peer_langchain.py \\
        --dataset ../shared/data/financebench-dev/dataset.json --docs ../shared/data/financebench-dev/pdfs \\
        --work /tmp/peer-fb --rounds 2
    .venv/bin/python benchmarks/peer_langchain.py \
        --dataset ../shared/data/mmlongbench-doc/samples.json --docs ../shared/data/mmlongbench-doc/documents \
        --work /tmp/peer-mm

The recipe is what a user copies from a tutorial: PyMuPDFLoader (one LangChain document per page),
RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200), the same all-MiniLM-L6-v2
weights trident embeds with (from the same package), a FAISS flat index, top 20 chunks per
question, turned into pages in order of their best chunk. Both sides answer each question inside
its own document (the per-document scope `trident eval retrieval` uses) and are scored with the
same functions: Recall@5, MRR (over the top 5, as `eval retrieval`), F1@5 and Recall@20 over the answerable questions with gold pages,
with a paired bootstrap 95% interval for the difference in R@5 and MRR (the sets are small).

Indexing speed: each round builds both indexes from nothing, alternating which goes first, and
reports pages/s (wall) and process CPU seconds; trident runs as the `trident index` command a user
would type, the recipe in this process (its imports are timed apart and left out).

Recorded (results/peer_langchain_<set>.json) when every document of the dataset is indexed.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _results import write_result

from trident_local.evaluate.mmlongbench import load_samples
from trident_local.evaluate.retrieval_metrics import f1_at, mrr, recall_at

ROOT = Path(__file__).resolve().parents[1]
TRIDENT = Path(sys.executable).with_name("trident")
TOP_CHUNKS = 20


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def minilm_path() -> str:
    from trident_local.models.profiles import load_profile

    return str(load_profile("minilm").weights_path())


class Recipe:
    """The tutorial recipe, one FAISS store per document (the per-document scope)."""

    def __init__(self) -> None:
        from langchain_huggingface import HuggingFaceEmbeddings

        self.emb = HuggingFaceEmbeddings(model_name=minilm_path(), model_kwargs={"device": "cpu"})
        self.stores: dict[str, object] = {}

    def build(self, pdfs: list[Path]) -> int:
        from langchain_community.document_loaders import PyMuPDFLoader
        from langchain_community.vectorstores import FAISS
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
        pages = 0
        for pdf in pdfs:
            docs = PyMuPDFLoader(str(pdf)).load()
            pages += len(docs)
            chunks = [c for c in splitter.split_documents(docs) if c.page_content.strip()]
            self.stores[pdf.name] = FAISS.from_documents(chunks, self.emb) if chunks else None
        return pages

    def ranked_pages(self, doc_name: str, question: str) -> list[int]:
        store = self.stores.get(doc_name)
        if store is None:
            return []
        out: list[int] = []
        for d in store.similarity_search(question, k=TOP_CHUNKS):
            page = int(d.metadata["page"]) + 1  # PyMuPDFLoader's pages are 0-based
            if page not in out:
                out.append(page)
        return out


def trident_index(pdfs: list[Path], index_dir: Path) -> int:
    """`trident index` on the PDFs (a fresh index); the pages it indexed."""
    shutil.rmtree(index_dir, ignore_errors=True)
    out = subprocess.run([str(TRIDENT), "index", *map(str, pdfs), "--index", str(index_dir), "--json", "-"],
                         check=True, capture_output=True, text=True)
    return int(json.loads(out.stdout)["pages_indexed"])


def trident_rankings(index_dir: Path, dataset: Path, pool: str, k: int) -> dict[int, list[int]]:
    """Per-question final rankings of `trident eval retrieval` (the default pool), by qid."""
    run = index_dir.parent / f"eval-{pool}.jsonl"
    run.unlink(missing_ok=True)
    subprocess.run([str(TRIDENT), "eval", "retrieval", "--index", str(index_dir), "--dataset", str(dataset),
                    "--pool", pool, "--k", str(k), "--run", str(run), "--fresh", "--json", "-"],
                   check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in run.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "qid" in r]
    return {int(r["qid"]): list(r["pool_pages"]) for r in rows}


def scores(ranked: list[int], gold: set[int], k: int) -> dict[str, float]:
    return {f"recall@{k}": recall_at(ranked, gold, k), "mrr": mrr(ranked[:k], gold),
            f"f1@{k}": f1_at(ranked, gold, k), "recall@20": recall_at(ranked, gold, 20)}


def paired_ci(a: np.ndarray, b: np.ndarray, reps: int = 10000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of a - b and its bootstrap 95% interval (questions resampled with replacement)."""
    rng = np.random.default_rng(seed)
    d = a - b
    idx = rng.integers(0, len(d), size=(reps, len(d)))
    boots = d[idx].mean(axis=1)
    return float(d.mean()), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, required=True, help="MMLongBench-Doc style samples JSON")
    ap.add_argument("--docs", type=Path, required=True, help="folder of the dataset's PDFs")
    ap.add_argument("--work", type=Path, required=True, help="scratch folder for the trident index")
    ap.add_argument("--name", default=None, help="result name suffix (default: the dataset folder's name)")
    ap.add_argument("--pool", default="fused", help="trident pool (default: ask's default)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1, help="index both this many times, alternating the order")
    ap.add_argument("--limit-docs", type=int, default=None, help="only the first N documents (smoke runs)")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args(argv)

    records = [r for r in load_samples(args.dataset) if r.answerable and r.evidence_pages]
    names = sorted({r.doc_name for r in records})
    missing = [n for n in names if not (args.docs / n).is_file()]
    if missing:
        sys.exit(f"error: {len(missing)} documents of the dataset are not in {args.docs}: {missing[:3]}")
    if args.limit_docs:
        names = names[: args.limit_docs]
    records = [r for r in records if r.doc_name in set(names)]
    pdfs = [args.docs / n for n in names]
    args.work.mkdir(parents=True, exist_ok=True)
    index_dir = args.work / "trident-index"

    t0 = time.perf_counter()
    recipe = Recipe()
    import_s = time.perf_counter() - t0
    speed: dict[str, list[dict[str, float]]] = {"trident": [], "recipe": []}
    for rnd in range(args.rounds):
        order = ["trident", "recipe"] if rnd % 2 == 0 else ["recipe", "trident"]
        for who in order:
            w0, c0 = time.perf_counter(), (child_cpu() if who == "trident" else self_cpu())
            if who == "trident":
                pages = trident_index(pdfs, index_dir)
            else:
                recipe.stores.clear()
                pages = recipe.build(pdfs)
            wall = time.perf_counter() - w0
            cpu = (child_cpu() if who == "trident" else self_cpu()) - c0
            speed[who].append({"pages": pages, "seconds": wall, "cpu_seconds": cpu, "pages_per_s": pages / wall})
            print(f"round {rnd + 1}: {who} indexed {pages} pages in {wall:.1f} s ({pages / wall:.2f} pages/s, "
                  f"{cpu:.0f} CPU-s)", flush=True)

    tri = trident_rankings(index_dir, args.dataset, args.pool, args.k)
    per_q: dict[str, list[dict[str, float]]] = {"trident": [], "recipe": []}
    for r in records:
        gold = set(r.evidence_pages)
        per_q["trident"].append(scores(tri.get(r.qid, []), gold, args.k))
        per_q["recipe"].append(scores(recipe.ranked_pages(r.doc_name, r.question), gold, args.k))
    keys = list(per_q["trident"][0])
    quality = {who: {key: float(np.mean([q[key] for q in rows])) for key in keys} for who, rows in per_q.items()}
    diff = {key: paired_ci(np.array([q[key] for q in per_q["trident"]]), np.array([q[key] for q in per_q["recipe"]]))
            for key in (f"recall@{args.k}", "mrr")}
    pps = {who: float(np.median([s["pages_per_s"] for s in runs])) for who, runs in speed.items()}
    figures = {"dataset": str(args.dataset), "documents": len(names), "questions": len(records),
               "pool": args.pool, "k": args.k, "quality": quality, "speed": speed, "pages_per_s": pps,
               "speed_ratio": pps["trident"] / pps["recipe"], "difference_ci95": diff,
               "recipe_import_seconds": import_s}

    def table() -> dict:
        rows = [[f"trident index + eval retrieval ({args.pool})" if who == "trident" else
                 "LangChain recipe (PyMuPDFLoader, splitter 1000/200, MiniLM, FAISS, top 20 chunks)"]
                + [f"{quality[who][key]:.3f}" for key in keys] + [f"{pps[who]:.2f}"] for who in ("trident", "recipe")]
        ci = "; ".join(f"{key} {m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for key, (m, lo, hi) in diff.items())
        return {"title": f"{args.dataset.parent.name}: {len(records)} questions over {len(names)} PDFs, "
                         f"per-document retrieval, K = {args.k}",
                "columns": ["system", *keys, "pages/s"], "rows": rows,
                "notes": f"trident - recipe, mean and paired bootstrap 95% interval: {ci}. Indexing alternated "
                         f"over {args.rounds} round(s), median pages/s: trident/recipe = "
                         f"{figures['speed_ratio']:.2f}x."}

    tab = table()
    print(tab["title"])
    print(" | ".join(tab["columns"]))
    for row in tab["rows"]:
        print(" | ".join(row))
    print(tab["notes"])
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))
    name = args.name or args.dataset.parent.name
    write_result(f"peer_langchain_{name}", figures, table, args=args, argv=argv,
                 full=args.limit_docs is None, why_not="--limit-docs leaves documents out")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
