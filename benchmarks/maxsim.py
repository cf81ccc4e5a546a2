"""MaxSim throughput, peak memory and error: kernels vs colpali-engine vs a plain einsum.

    .venv/bin/python benchmarks/maxsim.py --no-memory --methods ours ours_exact colpali_engine  # ~2 min
    .venv/bin/python benchmarks/maxsim.py                      # every method, with peak memory
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 .venv/bin/python benchmarks/maxsim.py --no-memory \\
        --methods ours ours_exact colpali_engine               # one core each: no thread scheduling
    python benchmarks/maxsim.py --device cuda --pages 1000 10000 --repeats 5 \\
        --methods ours ours_exact ours_native ours_torch colpali_engine

ColPali-shaped random data (queries 32 x 128, pages 1,030 x 128, unit-norm tokens; each
query is a noisy copy of tokens from one page so rankings have a real top), packed in the
benchmarked dtype (``--dtypes``, default fp32 bf16 fp16), 16 queries, 1,000 pages. All
methods run in this one process, interleaved, ``--repeats`` times each; the best time counts
(other jobs share the machine: the minimum is the least disturbed run); the 1-minute load
average is read before and after every round of repeats. Methods:

- ``ours``: ``trident_kernels.maxsim``, default ``precision="fp32"`` (fp32 accumulation and
  output). With AMX-BF16 the fused AMX kernel (``kernels/trident_kernels/amx_maxsim.c``): page
  tokens split into bf16 parts (fp32: hi*hi + hi*lo + lo*hi, each product within 2^-15 relative
  of exact; fp16 the same; bf16 one exact term), per-page max taken from the fp32 tiles, runs of
  pages on one worker thread per core. With AVX512-BF16 but no AMX, ``avx512_maxsim.c``
  (``vdpbf16ps`` for bf16; fp32 and fp16 pages through a bf16 screen then exact fp32 dots).
  Without either (or ``TRIDENT_KERNELS_NO_AMX=1``) the blocked torch path. On CUDA the fused
  Triton kernel (fp32 as 3xTF32);
- ``ours_exact``: ``precision="exact"``, products exact in fp32;
- ``ours_native``: ``precision="native"``, 16-bit GEMM, each dot rounded to 16 bits before the max;
- ``ours_torch``: ``precision="exact", backend="torch"``, the blocked torch path;
- ``ours_int8``: ``maxsim_int8`` on ``quantize_pages`` output (quantisation not timed; CPU only);
- ``colpali_engine``: ``BaseVisualRetrieverProcessor.score_multi_vector`` exactly as it batches
  (128 x 128, zero padding, einsum in the input dtype);
- ``einsum``: one fp32 einsum per page.

Columns: best seconds, pages/s (all queries together), speedup vs colpali-engine, peak memory
(MiB) and its ratio to colpali-engine's, max |error| against float64 MaxSim of the same rounded
inputs, recall@1 and recall@10 of each ranking against that reference.

Peak memory is measured separately, one fresh subprocess per (config, method): the
subprocess builds the same data, then a thread samples RSS (/proc/self/statm) every
0.5 ms while the method runs once; the figure is peak RSS minus RSS just before the call.
A fresh process matters: after one method frees its buffers, glibc keeps some of that
memory resident, which would hide the next method's allocations. tracemalloc is useless
here (it does not see torch's allocator).

With ``--device cuda`` the data is made on the GPU, every method runs there (ours is the
fused Triton kernel; colpali-engine's scorer is given ``device="cuda"``), each timed call
ends with a device synchronise, and peak memory is ``torch.cuda.max_memory_allocated``
above what was allocated before the call, in this process (the caching allocator's
statistics are exact, so no subprocess is needed). The int8 path is CPU-only.

Recorded (results/maxsim.json; results/maxsim_cuda.json with ``--device cuda``) when every
``--pages`` is at least 1,000 and the data shape is the default one. ``--background B`` makes a
share B of every page's tokens near-copies of one shared direction (the bf16 screen's worst case)
and is not recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import write_result  # noqa: E402

from trident_kernels import PackedPages, maxsim, maxsim_int8, quantize_pages  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
SHAPE = ("queries", "page_tokens", "query_tokens", "dim", "background")  # recorded only at their defaults
METHODS = ("ours", "ours_exact", "ours_native", "ours_torch", "ours_int8", "colpali_engine", "einsum")


def make_data(
    n_pages: int,
    n_queries: int,
    page_tokens: int,
    query_tokens: int,
    dim: int,
    dtype: torch.dtype,
    seed: int = 0,
    device: str = "cpu",
    background: float = 0.0,
) -> tuple[list[torch.Tensor], PackedPages]:
    """Unit-norm random pages (packed, in ``dtype``) and queries drawn from random pages.

    ``background``: that share of every page's tokens are near-copies (noise 0.002 a value) of
    ONE direction shared by all pages, as blank regions of real pages may embed alike; the
    queries drawn from them then have hundreds of near-tied maxima on every page, the worst
    case for the screened fp32 kernel (avx512_maxsim.c). 0 draws the same data as before."""
    g = torch.Generator(device=device).manual_seed(seed)
    tokens = torch.empty(n_pages * page_tokens, dim, dtype=dtype, device=device)
    bg = torch.nn.functional.normalize(torch.randn(dim, generator=g, device=device), dim=0) if background else None
    chunk = 1 << 18
    for start in range(0, tokens.shape[0], chunk):
        rows = min(chunk, tokens.shape[0] - start)
        block = torch.randn(rows, dim, generator=g, device=device)
        if background:
            blank = (torch.arange(start, start + rows, device=device) % page_tokens) < background * page_tokens
            block[blank] = bg + 0.002 * block[blank]
        tokens[start : start + rows] = torch.nn.functional.normalize(block, dim=-1)
    offsets = np.arange(n_pages + 1, dtype=np.int64) * page_tokens
    queries = []
    for _ in range(n_queries):
        page = int(torch.randint(n_pages, (1,), generator=g, device=device))
        rows = torch.randint(page_tokens, (query_tokens,), generator=g, device=device) + page * page_tokens
        noisy = tokens[rows].float() + 0.05 * torch.randn(query_tokens, dim, generator=g, device=device)
        queries.append(torch.nn.functional.normalize(noisy, dim=-1).to(dtype))
    return queries, PackedPages(tokens, offsets)


def exact_scores(queries: list[torch.Tensor], pages: PackedPages, chunk_pages: int = 256) -> torch.Tensor:
    """float64 MaxSim of the (already rounded) inputs, a chunk of pages at a time."""
    if pages.device.type == "cuda":
        return exact_scores_cuda(queries, pages)
    q64 = [q.double() for q in queries]
    parts = []
    for start in range(0, pages.n_pages, chunk_pages):
        view = pages.view(start, start + chunk_pages)
        parts.append(maxsim(q64, PackedPages(view.tokens.double(), view.offsets)))
    return torch.cat(parts, dim=1)


def exact_scores_cuda(queries: list[torch.Tensor], pages: PackedPages, chunk_pages: int = 64) -> torch.Tensor:
    """float64 MaxSim on the GPU (the CPU would take minutes at 10,000 pages); equal page lengths."""
    q = torch.stack(queries).double()
    tokens = pages.tokens.view(pages.n_pages, -1, pages.tokens.shape[1])
    parts = []
    for start in range(0, pages.n_pages, chunk_pages):
        block = tokens[start : start + chunk_pages].double()
        parts.append(torch.einsum("qnd,psd->qpns", q, block).amax(3).sum(2))
    return torch.cat(parts, dim=1).cpu()


def einsum_scores(queries: list[torch.Tensor], pages: PackedPages) -> torch.Tensor:
    """The obvious implementation: one fp32 einsum per page, no padding, no blocking."""
    q = torch.stack(queries).float()  # equal query lengths here
    out = torch.empty(q.shape[0], pages.n_pages, device=q.device)
    for j in range(pages.n_pages):
        out[:, j] = torch.einsum("qnd,sd->qns", q, pages.page(j).float()).amax(2).sum(1)
    return out


def make_methods(queries: list[torch.Tensor], pages: PackedPages) -> dict[str, Callable[[], torch.Tensor]]:
    from colpali_engine.utils.processing_utils import BaseVisualRetrieverProcessor

    page_list = [pages.page(j) for j in range(pages.n_pages)]  # views, no copy
    device = pages.device.type
    methods = {
        "ours": lambda: maxsim(queries, pages),
        "ours_exact": lambda: maxsim(queries, pages, precision="exact"),
        "ours_native": lambda: maxsim(queries, pages, precision="native"),
        "ours_torch": lambda: maxsim(queries, pages, precision="exact", backend="torch"),
        "colpali_engine": lambda: BaseVisualRetrieverProcessor.score_multi_vector(
            queries, page_list, device=device
        ),
        "einsum": lambda: einsum_scores(queries, pages),
    }
    if device == "cpu":
        int8_pages = quantize_pages(pages)  # index-time work, not timed
        methods["ours_int8"] = lambda: maxsim_int8(queries, int8_pages)
    return methods


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def peak_cuda_delta(fn: Callable[[], object]) -> int:
    """Peak CUDA memory allocated while ``fn`` runs, above what was allocated before."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_delta(fn: Callable[[], object], interval_s: float = 5e-4) -> int:
    """Peak RSS while ``fn`` runs, minus RSS just before (see module doc)."""
    base = peak = rss_bytes()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_bytes())
            time.sleep(interval_s)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        fn()
    finally:
        done.set()
        thread.join()
    return max(peak, rss_bytes()) - base


def memory_probe(args: argparse.Namespace) -> None:
    """Subprocess entry: one method, one call, print the RSS delta as JSON."""
    queries, pages = make_data(
        args.pages[0],
        args.queries,
        args.page_tokens,
        args.query_tokens,
        args.dim,
        DTYPES[args.dtypes[0]],
        args.seed,
        background=args.background,
    )
    make_methods(queries[:2], pages.view(0, 8))[args.probe]()  # one-time library set-up is not the method's
    methods = make_methods(queries, pages)
    print(json.dumps({"peak_bytes": peak_rss_delta(methods[args.probe])}))


def measure_memory(args: argparse.Namespace, n_pages: int, dtype: str, method: str) -> int | None:
    cmd = [
        sys.executable,
        __file__,
        "--probe",
        method,
        "--pages",
        str(n_pages),
        "--dtypes",
        dtype,
        "--queries",
        str(args.queries),
        "--page-tokens",
        str(args.page_tokens),
        "--query-tokens",
        str(args.query_tokens),
        "--dim",
        str(args.dim),
        "--seed",
        str(args.seed),
        "--background",
        str(args.background),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  memory probe {method} failed: {proc.stderr[-500:]}", file=sys.stderr)
        return None
    return int(json.loads(proc.stdout.strip().splitlines()[-1])["peak_bytes"])


def recall_at(k: int, scores: torch.Tensor, exact: torch.Tensor) -> float:
    k = min(k, exact.shape[1])
    got, want = scores.topk(k, dim=1).indices, exact.topk(k, dim=1).indices
    return float(
        np.mean([len(set(a.tolist()) & set(b.tolist())) / k for a, b in zip(got, want, strict=True)])
    )


def run_config(args: argparse.Namespace, n_pages: int, dtype: str) -> list[dict]:
    queries, pages = make_data(
        n_pages,
        args.queries,
        args.page_tokens,
        args.query_tokens,
        args.dim,
        DTYPES[dtype],
        args.seed,
        args.device,
        args.background,
    )
    methods = {m: fn for m, fn in make_methods(queries, pages).items() if m in args.methods}
    warm_q, warm_p = queries[:2], pages.view(0, min(8, n_pages))
    for name in methods:  # first-call costs (oneDNN kernel selection, thread pools)
        make_methods(warm_q, warm_p)[name]()
    if args.device == "cuda":  # the fused kernel autotunes on its first full-size call
        for fn in methods.values():
            fn()
    times: dict[str, list[float]] = {m: [] for m in methods}
    results: dict[str, torch.Tensor] = {}
    load = [os.getloadavg()[0]]
    for _ in range(args.repeats):  # interleaved: slow phases of other jobs hit every method
        for name, fn in methods.items():
            synchronize(args.device)
            start = time.perf_counter()
            results[name] = fn()
            synchronize(args.device)
            times[name].append(time.perf_counter() - start)
        load.append(os.getloadavg()[0])
    exact = exact_scores(queries, pages)
    cuda_peaks = {}
    if args.device == "cuda" and not args.no_memory:
        cuda_peaks = {name: peak_cuda_delta(fn) for name, fn in methods.items()}
    del methods, pages, queries
    rows = []
    for name, ts in times.items():
        err = (results[name].double().cpu() - exact).abs()
        rows.append(
            {
                "pages": n_pages,
                "dtype": dtype,
                "method": name,
                "queries": args.queries,
                "seconds_best": min(ts),
                "seconds_median": statistics.median(ts),
                "pages_per_s": n_pages / min(ts),
                "max_abs_err": float(err.max()),
                "mean_abs_err": float(err.mean()),
                "recall@1": recall_at(1, results[name], exact),
                "recall@10": recall_at(10, results[name], exact),
                "peak_mem_mb": cuda_peaks[name] / 2**20 if name in cuda_peaks else None,
                "device": args.device,
                "loadavg_1min": [round(x, 2) for x in load],
            }
        )
    if not args.no_memory and args.device == "cpu":
        for row in rows:
            peak = measure_memory(args, n_pages, dtype, row["method"])
            row["peak_mem_mb"] = None if peak is None else peak / 2**20
    base = next((r for r in rows if r["method"] == "colpali_engine"), None)
    for row in rows:
        if base:
            row["speedup_vs_colpali_engine"] = base["seconds_best"] / row["seconds_best"]
            if row["peak_mem_mb"] is not None and base["peak_mem_mb"]:
                row["memory_ratio_vs_colpali_engine"] = row["peak_mem_mb"] / base["peak_mem_mb"]
    return rows


COLUMNS = ["pages", "dtype", "method", "best s", "pages/s", "x colpali", "peak MiB", "mem ratio",
           "max abs err", "R@1", "R@10"]


def table_cells(r: dict) -> list[str]:
    mem, ratio = r["peak_mem_mb"], r.get("memory_ratio_vs_colpali_engine")
    return [str(r["pages"]), r["dtype"], r["method"], f"{r['seconds_best']:.3f}", f"{r['pages_per_s']:.0f}",
            f"{r.get('speedup_vs_colpali_engine', float('nan')):.2f}", "-" if mem is None else f"{mem:.1f}",
            "-" if ratio is None else f"{ratio:.3f}", f"{r['max_abs_err']:.2e}", f"{r['recall@1']:.2f}",
            f"{r['recall@10']:.2f}"]


def print_table(rows: list[dict]) -> None:
    widths = [6, 5, -15, 8, 9, 9, 9, 9, 9, 5, 5]  # negative: left-aligned
    line = lambda cells: " ".join(f"{c:<{-w}}" if w < 0 else f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))  # noqa: E731
    head = line(COLUMNS)
    print(head)
    print("-" * len(head))
    for r in rows:
        print(line(table_cells(r)))


def summary(rows: list[dict]) -> dict:
    """Headline numbers for our default path ("ours": fp32 accumulation, exact products)."""
    ours = [r for r in rows if r["method"] == "ours"]
    key = lambda r: f"{r['pages']}/{r['dtype']}"  # noqa: E731
    speed = {key(r): r.get("speedup_vs_colpali_engine") for r in ours}
    memory = {key(r): r.get("memory_ratio_vs_colpali_engine") for r in ours}
    errors = {key(r): r["max_abs_err"] for r in ours}
    return {
        "speedup_vs_colpali_engine": {"min": min((v for v in speed.values() if v), default=None), **speed},
        "memory_ratio_vs_colpali_engine": {
            "max": max((v for v in memory.values() if v), default=None),
            **memory,
        },
        "max_abs_err": {"max": max(errors.values(), default=None), **errors},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, nargs="+", default=[1000])
    parser.add_argument("--dtypes", nargs="+", default=["fp32", "bf16", "fp16"], choices=list(DTYPES))
    parser.add_argument("--queries", type=int, default=16)
    parser.add_argument("--page-tokens", type=int, default=1030)
    parser.add_argument("--query-tokens", type=int, default=32)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--background",
        type=float,
        default=0.0,
        help="share of each page's tokens that are near-copies of one direction shared by all pages",
    )
    parser.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="cuda: data and every method on the GPU (ours = the fused Triton kernel)",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the per-method memory subprocesses")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write the JSON report here (a recorded run goes to benchmarks/results/maxsim[_cuda].json)",
    )
    parser.add_argument("--probe", choices=METHODS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        memory_probe(args)
        return
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device")
    cpu = platform.processor() or platform.machine()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {cpu}, "
        f"cpu capability {torch.backends.cpu.get_cpu_capability()}"
        f"{', ' + torch.cuda.get_device_name() if args.device == 'cuda' else ''}; "
        f"{args.queries} queries x {args.query_tokens} tokens, pages {args.page_tokens} x {args.dim}"
    )
    load_at_start = os.getloadavg()
    print(f"load average (1/5/15 min) at start: {load_at_start}: other jobs share this machine")
    rows = []
    for n_pages in args.pages:
        for dtype in args.dtypes:
            print(f"running pages={n_pages} dtype={dtype} ...", flush=True)
            rows.extend(run_config(args, n_pages, dtype))
            load = rows[-1]["loadavg_1min"]
            print(f"  1-min load average during the repeats: {min(load):.2f}-{max(load):.2f}", flush=True)
    print_table(rows)
    report = {
        **summary(rows),
        "rows": rows,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "probe"},
        "machine": {
            "loadavg_at_start": load_at_start,
            "loadavg_at_end": os.getloadavg(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpus": os.cpu_count(),
            "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
        },
        "notes": "best of --repeats interleaved runs; peak memory = "
        + (
            "CUDA max_memory_allocated delta, in process"
            if args.device == "cuda"
            else "RSS delta, fresh subprocess per method"
        ),
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        print(f"wrote {args.out}")
    toy = [f"--{k.replace('_', '-')} {getattr(args, k)}" for k in SHAPE if getattr(args, k) != parser.get_default(k)]
    toy += [f"--pages {n}" for n in args.pages if n < 1000]
    write_result(
        "maxsim_cuda" if args.device == "cuda" else "maxsim",
        report,
        lambda: {
            "title": f"{args.queries} queries x {args.query_tokens} tokens, pages {args.page_tokens} x {args.dim}, "
            f"{args.device}, {torch.get_num_threads()} torch threads, best of {args.repeats}",
            "columns": COLUMNS,
            "rows": [table_cells(r) for r in rows],
            "notes": "1-min load average during the repeats: "
            + "; ".join(f"{r['pages']}/{r['dtype']} {min(r['loadavg_1min']):.2f}-{max(r['loadavg_1min']):.2f}"
                        for r in rows if r["method"] == rows[0]["method"]),
        },
        args=report["config"],
        full=not toy,
        why_not="smaller or other-shaped than the recorded configuration (" + ", ".join(toy) + ")",
    )


if __name__ == "__main__":
    main()
