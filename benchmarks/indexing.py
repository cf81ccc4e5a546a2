"""Indexing throughput: `trident index` end to end beside raw PyMuPDF extraction of the same files.

    .venv/bin/python benchmarks/indexing.py --data ../shared/data/mmlongbench-doc/documents \\
        --sets text,scanned --ray 1,2
    .venv/bin/python benchmarks/indexing.py --sets large:2000 --no-stages   # a run at scale
    .venv/bin/python benchmarks/indexing.py --sets text --embedders minilm,minilm-int8   # bf16 vs int8

Sets (read in place from --data, the MMLongBench-Doc public subset): ``text``, six text-layer
PDFs (237 pages: two arXiv papers, a TACL paper, a Pew report, two 10-Ks); ``scanned``, two
slide decks without a text layer (48 pages, OCR with tesseract); ``large:N``, the first
documents of --data by file name until they hold at least N pages (text-layer and scanned
alike, as a real collection comes; pages without a text layer are counted and go through OCR).

For each set of PDFs (read in place) it measures, in one run:
  * raw PyMuPDF: ``page.get_text("dict")`` and plain ``page.get_text()`` over every page, one core;
  * ``trident index`` (default pools bm25 + dense) as a fresh process: pages/s including start-up,
    and the peak RSS of the process tree;
    (once per profile in --embedders, in turn; the first one is used for the rows below);
  * ``trident index --ray local --workers N`` for each N in --ray (peak RSS not comparable: Ray's
    worker processes are not children of the command);
  * a per-stage profile in this process, sequential on one core: start-up (imports + embedder
    load), parse (text blocks, sections; OCR for the scanned set), object detection, dense
    (windows + embedding), writes, and the global pool builds.
The load average is recorded before and after: the numbers only mean something beside it. CPU
seconds are reported because the shared machine's load makes wall time a poor measure of cost.
To compare two commits, run each from its own checkout with ``PYTHONPATH`` set to it and --data
pointing at the same folder, alternating.

Recorded (results/indexing.json) unless a ``large:N`` set has N below 2,000.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The public-subset documents: six text-layer PDFs (237 pages) and two scanned ones (no text layer).
SETS = {
    "text": ["2312.10997v5.pdf", "2310.09158v1.pdf", "tacl_a_00660.pdf", "PH_2016.06.08_Economy-Final.pdf",
             "NETFLIX_2015_10K.pdf", "BESTBUY_2023_10K.pdf"],
    "scanned": ["b3m5kaeqm2w8n4bwcesw-140602121350-phpapp02_95.pdf",
                "avalaunchpresentationsthatkickasteriskv3copy-150318114804-conversion-gate01_95.pdf"],
}
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_result  # noqa: E402

TRIDENT = [sys.executable, "-m", "trident_local.cli"]
# Runs a command and prints the peak RSS (KiB) of its process tree (children that were waited for).
_PEAK = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
         "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
         "print(u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); sys.exit(r)")


def large_set(data: Path, min_pages: int) -> tuple[list[str], int]:
    """File names (sorted) until ``min_pages`` pages are reached, and how many pages have no text layer."""
    import pymupdf

    names, pages, no_text = [], 0, 0
    for f in sorted(data.glob("*.pdf")):
        with pymupdf.open(f) as pdf:
            if pdf.needs_pass:
                continue
            pages += pdf.page_count
            no_text += sum(not page.get_text().strip() for page in pdf)
        names.append(f.name)
        if pages >= min_pages:
            break
    return names, no_text


def raw_pymupdf(files: list[Path]) -> dict:
    import pymupdf

    out = {}
    for mode in ("dict", "text"):
        pages, t0, c0 = 0, time.perf_counter(), time.process_time()
        for f in files:
            with pymupdf.open(f) as pdf:
                for page in pdf:
                    page.get_text("dict") if mode == "dict" else page.get_text()
                    pages += 1
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        out[f"get_text({mode!r})" if mode == "dict" else "get_text()"] = {
            "pages": pages, "seconds": secs, "pages_per_s": pages / secs, "cpu_seconds": cpu}
    return out


def cli_run(files: list[Path], extra: list[str]) -> dict:
    """`trident index FILES` in a fresh process tree: wall seconds, pages, peak RSS."""
    with tempfile.TemporaryDirectory(prefix="trident-bench-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-c", _PEAK, *TRIDENT, "index", *map(str, files), "--index", f"{tmp}/idx",
               "--json", str(report), *extra]
        load = os.getloadavg()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        secs = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"trident index failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        rep = json.loads(report.read_text())
        peak_kib, cpu = proc.stderr.strip().splitlines()[-1].split()
    pages = rep["pages_indexed"]
    return {"command": "trident index FILES --index DIR " + " ".join(extra), "pages": pages, "seconds": secs,
            "pages_per_s": pages / secs, "seconds_inside": rep["seconds"], "peak_rss_mb": int(peak_kib) / 1024,
            "cpu_seconds": float(cpu), "pages_per_cpu_s": pages / float(cpu),
            "loadavg_before": load, "loadavg_after": os.getloadavg()}


def stage_profile(files: list[Path], embedder: str) -> dict:
    """Sequential per-stage seconds in this process (one core), with the same stage functions."""
    t0, c0 = time.perf_counter(), time.process_time()
    from trident_local.config import Config
    from trident_local.docs import ingest as ingest_mod
    from trident_local.index import Index
    from trident_local.models.profiles import build_model

    config = Config(embedder=embedder)
    ocr = build_model("ocr", config.ocr) if config.ocr != "none" else None
    secs = {"startup": 0.0, "parse": 0.0, "objects": 0.0, "dense": 0.0, "write": 0.0, "pools": 0.0}
    cpu = dict.fromkeys(secs, 0.0)  # process CPU seconds (all threads): meaningful on a shared machine
    real_detect = ingest_mod.detect_objects

    def timed_detect(*a, **kw):
        t, c = time.perf_counter(), time.process_time()
        try:
            return real_detect(*a, **kw)
        finally:
            secs["objects"] += time.perf_counter() - t
            cpu["objects"] += time.process_time() - c

    def span(name: str, t: float, c: float) -> None:
        secs[name] += time.perf_counter() - t
        cpu[name] += time.process_time() - c

    with tempfile.TemporaryDirectory(prefix="trident-stages-") as tmp:
        idx = Index.create(Path(tmp) / "idx", config)
        dense = idx.pool("dense")
        dense.embedder  # noqa: B018 -- load the model now, so its cost is start-up, not the first document
        secs["startup"], cpu["startup"] = time.perf_counter() - t0, time.process_time() - c0
        pages = windows = ocr_pages = 0
        ingest_mod.detect_objects = timed_detect
        try:
            for f in files:
                t, c = time.perf_counter(), time.process_time()
                doc = ingest_mod.ingest_pdf(f, ocr=ocr)
                span("parse", t, c)
                t, c = time.perf_counter(), time.process_time()
                idx.store.write_document(doc)
                span("write", t, c)
                t, c = time.perf_counter(), time.process_time()
                dense.prepare(doc)
                span("dense", t, c)
                idx.store.mark(doc.doc_id, "dense")
                pages += doc.n_pages
                ocr_pages += sum(p.ocr for p in doc.pages)
                import numpy as np

                windows += len(np.load(idx.store.doc_dir(doc.doc_id) / "dense_pages.npy"))
        finally:
            ingest_mod.detect_objects = real_detect
        t, c = time.perf_counter(), time.process_time()
        idx.build_pools()
        span("pools", t, c)
    secs["parse"] -= secs["objects"]  # parse without object detection (with OCR for scanned pages)
    cpu["parse"] -= cpu["objects"]
    total = sum(secs.values())
    return {"pages": pages, "ocr_pages": ocr_pages, "windows": windows, "seconds": secs, "cpu_seconds": cpu,
            "cpu_ms_per_page": {k: 1000 * v / max(pages, 1) for k, v in cpu.items()}, "total": total,
            "pages_per_s_sequential": pages / total, "windows_per_s": windows / secs["dense"] if secs["dense"] else 0,
            "windows_per_cpu_s": windows / cpu["dense"] if cpu["dense"] else 0,
            "embedder": embedder, "embedder_runtime": getattr(dense.embedder, "runtime", None)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path,
                    default=Path(__file__).resolve().parents[2] / "shared/data/mmlongbench-doc/documents")
    ap.add_argument("--sets", default="text,scanned")
    ap.add_argument("--ray", default="", help="local Ray worker counts to run, e.g. 1,2 (needs the [ray] extra)")
    ap.add_argument("--workers", type=int, default=2, help="`trident index --workers`")
    ap.add_argument("--no-stages", action="store_true", help="skip the per-stage profile")
    ap.add_argument("--embedders", default="minilm",
                    help="text embedder profiles to run, in turn on the same files (e.g. minilm,minilm-int8)")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args()

    result: dict = {"cpus": os.cpu_count(), "loadavg_at_start": os.getloadavg(), "sets": {}}
    for name in args.sets.split(","):
        no_text = None
        if name.startswith("large:"):
            SETS[name], no_text = large_set(args.data, int(name.split(":", 1)[1]))
        elif name not in SETS:
            raise SystemExit(f"unknown set {name!r}: use {', '.join(SETS)} or large:N")
        files = [args.data / f for f in SETS[name]]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise SystemExit(f"missing PDFs: {', '.join(missing)}")
        r: dict = {"files": SETS[name], "raw_pymupdf": raw_pymupdf(files), "runs": {}, "pages_without_text": no_text}
        embedders = args.embedders.split(",")
        for emb in embedders:
            label = "single process" + (f", {emb}" if len(embedders) > 1 else "")
            r["runs"][label] = cli_run(files, ["--workers", str(args.workers), "--embedder", emb])
        for n in filter(None, args.ray.split(",")):
            r["runs"][f"ray local, {n} worker(s)"] = cli_run(files, ["--ray", "local", "--workers", n,
                                                                      "--embedder", embedders[0]])
        if not args.no_stages:
            r["stages"] = stage_profile(files, embedders[0])
        raw = r["raw_pymupdf"]['get_text(\'dict\')']["pages_per_s"]
        for run in r["runs"].values():
            run["vs_get_text_dict"] = run["pages_per_s"] / raw
        result["sets"][name] = r
        print_set(name, r)
    result["loadavg_at_end"] = os.getloadavg()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
    print(f"\nload average at start {fmt_load(result['loadavg_at_start'])}, at end {fmt_load(result['loadavg_at_end'])};"
          f" {result['cpus']} CPUs; JSON: {args.out}")
    small = [n for n in args.sets.split(",") if n.startswith("large:") and int(n.split(":", 1)[1]) < 2000]
    write_result("indexing", result, lambda: {
        "title": "Indexing throughput beside raw PyMuPDF, per set (" + ", ".join(
            f"{n}: {len(r['files'])} PDFs, {r['raw_pymupdf']['get_text()']['pages']} pages"
            for n, r in result["sets"].items()) + ")",
        "columns": ["set", *COLUMNS],
        "rows": [[n, *c] for n, r in result["sets"].items() for c in set_rows(r)],
        "notes": " ".join(stage_line(n, r) for n, r in result["sets"].items() if "stages" in r),
    }, args=args, full=not small, why_not=f"smaller than the recorded configuration ({', '.join(small)})")


def fmt_load(load) -> str:
    return "/".join(f"{v:.2f}" for v in load)


COLUMNS = ["what", "pages/s", "seconds", "x get_text('dict')", "CPU s", "pages per CPU-s", "peak RSS MB",
           "load before"]


def set_rows(r: dict) -> list[list[str]]:
    """The printed table of one set, as cells."""
    rows = []
    dict_rate = r["raw_pymupdf"]["get_text('dict')"]["pages_per_s"]
    for what, m in r["raw_pymupdf"].items():
        rows.append([f"PyMuPDF {what}, 1 core", f"{m['pages_per_s']:.1f}", f"{m['seconds']:.2f}",
                     f"{m['pages_per_s'] / dict_rate:.3f}", f"{m['cpu_seconds']:.2f}",
                     f"{m['pages'] / m['cpu_seconds']:.1f}", "", ""])
    for what, m in r["runs"].items():
        ray = what.startswith("ray")
        rows.append([f"trident index, {what}", f"{m['pages_per_s']:.2f}", f"{m['seconds']:.1f}",
                     f"{m['vs_get_text_dict']:.3f}", "n/a" if ray else f"{m['cpu_seconds']:.1f}",
                     "n/a" if ray else f"{m['pages_per_cpu_s']:.2f}", "n/a" if ray else f"{m['peak_rss_mb']:.0f}",
                     fmt_load(m["loadavg_before"])])
    return rows


def stage_line(name: str, r: dict) -> str:
    s = r["stages"]
    return (f"Stages of {name} (one process, sequential; {s['pages']} pages, {s['ocr_pages']} OCR, {s['windows']} "
            f"windows, embedder {s['embedder']}, {s['embedder_runtime']}): "
            + ", ".join(f"{k} {v:.1f} s ({s['cpu_ms_per_page'][k]:.0f} CPU-ms/page)" for k, v in s["seconds"].items())
            + f"; {s['pages_per_s_sequential']:.2f} pages/s, {s['windows_per_s']:.1f} windows/s, "
            f"{s['windows_per_cpu_s']:.1f} windows per CPU-s.")


def print_set(name: str, r: dict) -> None:
    pages = r["raw_pymupdf"]["get_text()"]["pages"]
    no_text = r.get("pages_without_text")
    print(f"\n## {name}: {len(r['files'])} PDFs, {pages} pages"
          + (f" ({no_text} without a text layer)" if no_text is not None else "") + "\n")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|---" * len(COLUMNS) + "|")
    for row in set_rows(r):
        print("| " + " | ".join(row) + " |")
    if "stages" in r:
        print("\n" + stage_line(name, r))


if __name__ == "__main__":
    main()
