"""TokenIVF candidate generation + exact rerank vs exhaustive exact MaxSim.

Synthetic clustered corpus: a vocabulary of unit "concept" vectors; pages belong to
topics (about 20 pages each) and draw 60% of their tokens from their topic's concepts,
20% from anywhere in the vocabulary and 20% from a few background concepts shared by
every page (ColPali's blank patches); every token is a noisy copy of its concept. A query
takes 24 of its tokens from one page's concepts and 8 from the background.

    .venv/bin/python benchmarks/ann.py --pages 10000                    # ~1 min on 2 cores
    .venv/bin/python benchmarks/ann.py                                  # 10k, 30k, 100k pages (~8 min)
    .venv/bin/python benchmarks/ann.py --pages 10000 --page-tokens 1030  # ColPali page length

Reported per size: k-means + assignment build time, exhaustive exact top-k time
(``maxsim_topk``, all queries in one batch: its best case), TokenIVF search time for each
``--n-candidates``, recall@k against the exact top-k, and the speedup; the table shows the
smallest ``n_candidates`` reaching ``--target-recall`` (0.95). 50 queries, k = 20, fp16 pages.
Writes a time-vs-pages PNG (``--png``, git-ignored) and, with ``--out``, the JSON.

Default shape is 128 tokens per page, not ColPali's 1,030: 100k x 1,030 x 128 tokens are
26 GB even in fp16, more than this 24 GB machine holds. ``--page-tokens`` changes it.

The corpus is easy for centroid methods (tokens are noisy copies of a finite concept
vocabulary, and each page covers its topic's concepts): recalls here are an upper bound of
what real ColPali embeddings give; check recall on real page embeddings before trusting a
small ``n_candidates``.

Recorded (results/ann.json) when every ``--pages`` is at least 10,000 and ``--queries`` and
``--k`` are the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import write_result  # noqa: E402

from trident_kernels import PackedPages, maxsim_topk  # noqa: E402
from trident_kernels.ann import TokenIVF  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def make_corpus(
    n_pages: int,
    page_tokens: int,
    n_queries: int,
    query_tokens: int,
    dim: int,
    dtype: torch.dtype,
    seed: int = 0,
) -> tuple[PackedPages, list[torch.Tensor]]:
    """Clustered pages (packed) and queries; see the module doc for the recipe."""
    g = torch.Generator().manual_seed(seed)
    n_concepts, topic_size, pages_per_topic, n_background = 8192, 16, 20, 16
    concepts = torch.nn.functional.normalize(torch.randn(n_concepts, dim, generator=g), dim=-1)
    n_topics = max(1, n_pages // pages_per_topic)
    topics = torch.randint(n_concepts, (n_topics, topic_size), generator=g)
    background = torch.arange(n_background)
    noise = 0.6 / dim**0.5

    def page_concepts(pages: torch.Tensor) -> torch.Tensor:
        n = pages.numel()
        kind = torch.rand(n, page_tokens, generator=g)
        own = topics[pages % n_topics][
            torch.arange(n)[:, None], torch.randint(topic_size, (n, page_tokens), generator=g)
        ]
        anywhere = torch.randint(n_concepts, (n, page_tokens), generator=g)
        back = background[torch.randint(n_background, (n, page_tokens), generator=g)]
        return torch.where(kind < 0.6, own, torch.where(kind < 0.8, anywhere, back))

    def noisy(ids: torch.Tensor) -> torch.Tensor:
        x = concepts[ids.reshape(-1)] + noise * torch.randn(ids.numel(), dim, generator=g)
        return torch.nn.functional.normalize(x, dim=-1)

    tokens = torch.empty(n_pages * page_tokens, dim, dtype=dtype)
    chunk = max(1, (1 << 18) // page_tokens)
    for start in range(0, n_pages, chunk):
        pages = torch.arange(start, min(start + chunk, n_pages))
        tokens[start * page_tokens : (start + pages.numel()) * page_tokens] = noisy(page_concepts(pages)).to(
            dtype
        )
    queries = []
    for _ in range(n_queries):
        page = torch.randint(n_pages, (1,), generator=g)
        own = page_concepts(page)[0][torch.randint(page_tokens, (query_tokens - 8,), generator=g)]
        back = background[torch.randint(n_background, (8,), generator=g)]
        queries.append(noisy(torch.cat([own, back])).to(dtype))
    return PackedPages(tokens, np.arange(n_pages + 1, dtype=np.int64) * page_tokens), queries


def recall(got: torch.Tensor, want: torch.Tensor) -> float:
    return float(
        np.mean([len(set(a.tolist()) & set(b.tolist())) / b.numel() for a, b in zip(got, want, strict=True)])
    )


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run_size(args: argparse.Namespace, n_pages: int) -> dict:
    (pages, queries), t_data = timed(
        lambda: make_corpus(
            n_pages,
            args.page_tokens,
            args.queries,
            args.query_tokens,
            args.dim,
            DTYPES[args.dtype],
            args.seed,
        )
    )
    print(
        f"  data {t_data:.1f}s ({pages.total_tokens:,} tokens, {pages.tokens.nbytes / 2**30:.2f} GiB)",
        flush=True,
    )
    index, t_build = timed(lambda: TokenIVF.build(pages, n_centroids=args.n_centroids, seed=args.seed))
    print(f"  build {t_build:.1f}s ({index.n_centroids} centroids)", flush=True)
    (exact_scores, exact_ids), t_exact = timed(lambda: maxsim_topk(queries, pages, args.k))
    print(f"  exhaustive exact {t_exact:.2f}s", flush=True)
    sweep = []
    for n_cand in args.n_candidates:
        best = float("inf")
        for _ in range(args.repeats):
            (_, ids), t = timed(
                lambda n=n_cand: index.search(queries, args.k, n_candidates=n, nprobe=args.nprobe)
            )
            best = min(best, t)
        sweep.append(
            {
                "n_candidates": n_cand,
                "seconds": best,
                "recall": recall(ids, exact_ids),
                "speedup": t_exact / best,
            }
        )
        print(
            f"  n_candidates={n_cand}: {best:.2f}s recall@{args.k}={sweep[-1]['recall']:.3f} "
            f"speedup={sweep[-1]['speedup']:.1f}x",
            flush=True,
        )
    chosen = next((s for s in sweep if s["recall"] >= args.target_recall), sweep[-1])
    return {
        "pages": n_pages,
        "page_tokens": args.page_tokens,
        "tokens": pages.total_tokens,
        "n_centroids": index.n_centroids,
        "nprobe": args.nprobe,
        "data_seconds": t_data,
        "build_seconds": t_build,
        "exact_seconds": t_exact,
        "sweep": sweep,
        "chosen": chosen,
    }


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pages = [r["pages"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(pages, [r["exact_seconds"] for r in rows], "o-", label="exhaustive exact MaxSim")
    ax.plot(
        pages,
        [r["chosen"]["seconds"] for r in rows],
        "s-",
        label=f"TokenIVF + exact rerank (n_candidates={rows[-1]['chosen']['n_candidates']})",
    )
    for r in rows:
        ax.annotate(f"R@k {r['chosen']['recall']:.2f}", (r["pages"], r["chosen"]["seconds"]), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("pages")
    ax.set_ylabel(f"seconds for {rows[0].get('queries', '')} queries")
    ax.set_title(f"MaxSim search time vs index size ({rows[0]['page_tokens']} tokens/page)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--page-tokens", type=int, default=128)
    parser.add_argument("--query-tokens", type=int, default=32)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--n-candidates", type=int, nargs="+", default=[64, 128, 256, 512])
    parser.add_argument("--nprobe", type=int, default=8)
    parser.add_argument(
        "--n-centroids", type=int, default=None, help="default: trident_kernels.ann.default_n_centroids"
    )
    parser.add_argument("--dtype", choices=list(DTYPES), default="fp16", help="page storage dtype")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--target-recall", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    parser.add_argument("--png", type=Path, default=Path("benchmarks/results/ann_scaling.png"))
    args = parser.parse_args()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.queries} queries x "
        f"{args.query_tokens} tokens; pages {args.page_tokens} x {args.dim} {args.dtype}"
    )
    load_at_start = os.getloadavg()
    print(f"load average (1/5/15 min) at start: {load_at_start}: other jobs share this machine")
    rows = []
    for n_pages in sorted(args.pages):
        print(f"pages={n_pages}", flush=True)
        rows.append({**run_size(args, n_pages), "queries": args.queries})
    columns = ["pages", "tokens", "centroids", "build s", "exhaustive s", "TokenIVF s", "n_candidates",
               f"recall@{args.k}", "speedup"]
    cells = [[f"{r['pages']:,}", f"{r['tokens']:,}", str(r["n_centroids"]), f"{r['build_seconds']:.1f}",
              f"{r['exact_seconds']:.2f}", f"{r['chosen']['seconds']:.2f}", str(r["chosen"]["n_candidates"]),
              f"{r['chosen']['recall']:.3f}", f"{r['chosen']['speedup']:.1f}x"] for r in rows]
    print("\n" + " | ".join(columns))
    for c in cells:
        print(" | ".join(c))
    report = {
        "rows": rows,
        "recall_at_k": rows[-1]["chosen"]["recall"],
        "speedup": rows[-1]["chosen"]["speedup"],
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "machine": {
            "loadavg_at_start": load_at_start,
            "loadavg_at_end": os.getloadavg(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
        },
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        print(f"wrote {args.out}")
    plot(rows, args.png)
    print(f"wrote {args.png}")
    toy = [f"--pages {n}" for n in args.pages if n < 10_000]
    toy += [f"--{k} {getattr(args, k)}" for k in ("queries", "k") if getattr(args, k) != parser.get_default(k)]
    write_result(
        "ann",
        report,
        {
            "title": f"{args.queries} queries x {args.query_tokens} tokens, pages {args.page_tokens} x {args.dim} "
            f"{args.dtype}, k = {args.k}, nprobe = {args.nprobe}, target recall {args.target_recall}",
            "columns": columns,
            "rows": cells,
            "notes": "TokenIVF s, n_candidates, recall and speedup: the smallest swept n_candidates reaching the "
            "target recall (else the largest); every swept value is in the figures.",
        },
        args=report["config"],
        full=not toy,
        why_not="smaller than the recorded configuration (" + ", ".join(toy) + ")",
    )


if __name__ == "__main__":
    main()
