"""Dense embedding throughput on CPU: the embedder's runtimes on the same page windows, in one process.

    .venv/bin/python benchmarks/embedding.py     # 512 windows from ../shared/data/mmlongbench-doc/documents, 3 repeats
    .venv/bin/python benchmarks/embedding.py --data DIR --windows N --repeats R [--word-windows]

Windows are cut from real PDFs exactly as the dense pool of a new index cuts them (at most 128
MiniLM tokens under the model's tokenizer; ``--word-windows`` for the 160-word windows of older
indexes) and embedded by each configuration of the default profile (minilm): torch float32, torch
with the profile's dtype ("auto": bf16 autocast where the CPU multiplies bf16 natively), OpenVINO in
the matching precision, OpenVINO float32 and OpenVINO int8 (profile minilm-int8, quantised on first
use, about half a minute). Repeats are interleaved so that load drifts hit every row alike; the cost
is CPU seconds of this process (all its threads, median of the repeats), reported as windows per
CPU-second and as a ratio to torch with the profile's dtype. Quality: the lowest cosine of any
window's vector to the torch float32 vector of the same window, and the mean cosine.

Recorded (results/embedding.json) with at least 512 windows and 3 repeats (about 7 CPU-minutes).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import pymupdf
from _results import write_result

from trident_local.config import Config
from trident_local.models.profiles import build_model
from trident_local.windows import WindowSpec

ROOT = Path(__file__).resolve().parents[1]
CFG = Config()


def page_windows(data: Path, limit: int, spec: WindowSpec, embedder) -> list[str]:
    out: list[str] = []
    for pdf in sorted(data.glob("*.pdf")):
        with pymupdf.open(pdf) as doc:
            for page in doc:
                out += spec.cut(page.get_text(), embedder)
                if len(out) >= limit:
                    return out[:limit]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/mmlongbench-doc/documents")
    ap.add_argument("--windows", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--word-windows", action="store_true",
                    help=f"cut {CFG.chunk_words}-word windows (indexes written before token windows)")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"no such folder: {args.data}")
    spec = WindowSpec(CFG.chunk_words, CFG.chunk_stride, 0 if args.word_windows else CFG.chunk_tokens)
    texts = page_windows(args.data, args.windows, spec, build_model("embedder", "minilm"))
    if not texts:
        raise SystemExit(f"no text windows in the PDFs of {args.data}")
    load_before = os.getloadavg()[0]
    configs = {
        "torch float32": dict(runtime="torch", dtype="float32"),
        "torch, profile dtype": dict(runtime="torch"),
        "openvino, profile dtype": dict(runtime="openvino"),
        "openvino float32": dict(runtime="openvino", dtype="float32"),
        "openvino int8 (minilm-int8)": dict(runtime="openvino", profile="minilm-int8"),
    }
    models = {name: build_model("embedder", kw.pop("profile", "minilm"), **kw) for name, kw in configs.items()}
    cpu: dict[str, list[float]] = {name: [] for name in models}
    vecs: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        for name, m in models.items():
            t = time.process_time()
            vecs[name] = m.encode(texts, batch_size=32)
            cpu[name].append(time.process_time() - t)
    ref = vecs["torch float32"]
    base = statistics.median(cpu["torch, profile dtype"])
    rows = []
    for name, m in models.items():
        sec = statistics.median(cpu[name])
        rows.append({"config": name, "runtime": m.runtime, "autocast": getattr(m, "autocast", None),
                     "cpu_s": round(sec, 3), "windows_per_cpu_s": round(len(texts) / sec, 1),
                     "vs_torch_profile_dtype": round(base / sec, 2),
                     "min_cosine_to_torch_fp32": round(float((vecs[name] * ref).sum(1).min()), 6),
                     "mean_cosine_to_torch_fp32": round(float((vecs[name] * ref).sum(1).mean()), 6)})
    figures = {"windows": len(texts), "cut": spec.describe(), "repeats": args.repeats, "cpus": os.cpu_count(),
               "load_before": load_before, "load_after": os.getloadavg()[0], "rows": rows}
    tab = result_table(figures)
    print(f"\n{tab['title']} from {args.data}; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print("| " + " | ".join(tab["columns"]) + " |")
    print("|---" * len(tab["columns"]) + "|")
    for row in tab["rows"]:
        print("| " + " | ".join(row) + " |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2))
        print(f"\nwrote {args.out}")
    write_result("embedding", figures, tab, args=args, full=args.windows >= 512 and args.repeats >= 3,
                 why_not="fewer windows or repeats than the recorded --windows 512 --repeats 3")


def result_table(figures: dict) -> dict:
    """The printed table, from the figures (also what results/embedding.json shows)."""
    rows = [[r["config"], r["runtime"], str(r["windows_per_cpu_s"]), str(r["vs_torch_profile_dtype"]),
             f"{r['min_cosine_to_torch_fp32']:.4f} / {r['mean_cosine_to_torch_fp32']:.4f}"] for r in figures["rows"]]
    cut = f" ({figures['cut']})" if "cut" in figures else ""
    return {"title": f"{figures['windows']} windows{cut}; median of {figures['repeats']} interleaved repeats",
            "columns": ["config", "runtime", "windows per CPU-s", "x torch (profile dtype)",
                        "min / mean cosine to torch fp32"],
            "rows": rows,
            "notes": f"Load average {figures['load_before']:.2f} before, {figures['load_after']:.2f} after; "
                     f"{figures['cpus']} CPUs."}


if __name__ == "__main__":
    main()
