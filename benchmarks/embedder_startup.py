"""Embedder start-up: a fresh process's time to its first vectors, per way of loading the CPU embedder.

    .venv/bin/python benchmarks/embedder_startup.py                     # 5 interleaved repeats
    .venv/bin/python benchmarks/embedder_startup.py --st-python /tmp/ov/bin/python   # + sentence-transformers' OpenVINO backend

Every ``trident`` command (and every Ray worker) that embeds starts by loading the embedder, so its
start-up is paid per process. Each row is a fresh Python process that imports what it needs, loads
the default profile (minilm) and embeds 8 windows; its wall and CPU seconds from the interpreter's
start to the vectors are read from the process itself (``time.process_time`` covers its threads).

* ``openvino, torch-free``: the default path once the conversion is cached: OpenVINO IR, the
  saved tokenizer, numpy pooling (``openvino_encoder.CachedEncoder``); no torch, no sentence-transformers;
* ``openvino, via sentence-transformers``: the same cached IR, loaded the way the first run loads it
  (torch and sentence-transformers imported, the model loaded, its check sentences compared);
* ``torch``: sentence-transformers on torch;
* ``sentence-transformers openvino backend`` (only with ``--st-python``): ``SentenceTransformer(...,
  backend="openvino")`` from an export saved beforehand, under an interpreter that has
  ``optimum-intel[openvino]`` (it cannot share this environment: see docs/INDEX.md).

Configurations are interleaved per repeat, medians reported, with the ratio to the torch-free row.
Recorded (results/embedder_startup.json) with at least 5 repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import write_result

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [f"Revenue of the Coastal region rose to {95 + i}.2 million dollars in 2023." for i in range(8)]

# Each snippet ends by printing {"wall": ..., "cpu": ..., "runtime": ...}; wall counts from process start.
_PRELUDE = """
import json, os, sys, time
import psutil
_t0 = psutil.Process().create_time()
"""
_TRIDENT = _PRELUDE + """
sys.path[:0] = [{root!r}, {kernels!r}]
{patch}
from trident_local.models.profiles import build_model
m = build_model("embedder", "minilm", device="cpu", runtime={runtime!r})
v = m.encode({texts!r})
print(json.dumps({{"wall": time.time() - _t0, "cpu": time.process_time(), "runtime": m.runtime, "dim": v.shape[1]}}))
"""
_NO_CACHED = ("import trident_local.models.backends.openvino_encoder as ove\n"
              "ove.CachedEncoder.load = classmethod(lambda cls, *a, **k: None)")
_ST_OPENVINO = _PRELUDE + """
from sentence_transformers import SentenceTransformer
m = SentenceTransformer({path!r}, backend="openvino", device="cpu")
v = m.encode({texts!r}, normalize_embeddings=True)
print(json.dumps({{"wall": time.time() - _t0, "cpu": time.process_time(), "runtime": "openvino (st backend)",
                  "dim": int(v.shape[1])}}))
"""


def run(python: str, code: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, timeout=600,
                         cwd=tempfile.gettempdir())  # not the checkout: its kernels/ folder shadows a package
    if res.returncode != 0:
        raise SystemExit(f"a start-up run failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def st_export(python: str, weights: Path, into: Path) -> Path:
    """Copy the weights and save sentence-transformers' OpenVINO export beside them (once)."""
    dest = into / "minilm-st-openvino"
    shutil.copytree(weights, dest)
    code = ("from sentence_transformers import SentenceTransformer\n"
            f"m = SentenceTransformer({str(dest)!r}, backend='openvino', device='cpu')\n"
            f"m.save({str(dest)!r})\n")
    run_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    res = subprocess.run([python, "-c", code], capture_output=True, text=True, env=run_env, timeout=900,
                         cwd=tempfile.gettempdir())
    if res.returncode != 0:
        raise SystemExit(f"sentence-transformers' OpenVINO export failed:\n{res.stderr[-3000:]}")
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--st-python", default="", help="an interpreter with sentence-transformers and "
                    "optimum-intel[openvino], for the sentence-transformers OpenVINO backend row")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args()
    from trident_local.models.profiles import load_profile

    weights = load_profile("minilm").weights_path()
    fmt = dict(root=str(ROOT), kernels=str(ROOT / "kernels"), texts=TEXTS)
    configs = {
        "openvino, torch-free": _TRIDENT.format(**fmt, patch="", runtime="openvino"),
        "openvino, via sentence-transformers": _TRIDENT.format(**fmt, patch=_NO_CACHED, runtime="openvino"),
        "torch": _TRIDENT.format(**fmt, patch="", runtime="torch"),
    }
    pythons = dict.fromkeys(configs, sys.executable)
    with tempfile.TemporaryDirectory() as tmp:
        run(sys.executable, configs["openvino, via sentence-transformers"])  # the conversion is cached
        if args.st_python:
            path = st_export(args.st_python, Path(str(weights)), Path(tmp))
            configs["sentence-transformers openvino backend"] = _ST_OPENVINO.format(path=str(path), texts=TEXTS)
            pythons["sentence-transformers openvino backend"] = args.st_python
        got: dict[str, list[dict]] = {name: [] for name in configs}
        for _ in range(args.repeats):
            for name, code in configs.items():
                got[name].append(run(pythons[name], code))
    base = statistics.median(r["wall"] for r in got["openvino, torch-free"])
    rows = []
    for name, runs in got.items():
        wall, cpu = statistics.median(r["wall"] for r in runs), statistics.median(r["cpu"] for r in runs)
        rows.append({"config": name, "runtime": runs[0]["runtime"], "wall_s": round(wall, 2),
                     "cpu_s": round(cpu, 2), "x_torch_free": round(wall / base, 2)})
    cols = ["config", "runtime", "wall_s", "cpu_s", "x_torch_free"]
    lines = [" | ".join(cols), " | ".join("---" for _ in cols)]
    lines += [" | ".join(str(r[c]) for c in cols) for r in rows]
    print("\n".join(lines))
    figures = {"repeats": args.repeats, "rows": rows, "runs": got}
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))
    write_result("embedder_startup", figures, lambda: {
        "title": f"A fresh process to its first 8 vectors, profile minilm; median of {args.repeats} interleaved repeats",
        "columns": ["config", "runtime", "wall s", "CPU s", "wall x torch-free"],
        "rows": [[r["config"], r["runtime"], r["wall_s"], r["cpu_s"], r["x_torch_free"]] for r in rows],
        "notes": "Wall from the interpreter's start; CPU of the process (all threads). The torch-free row "
                 "reads the conversion an earlier load cached.",
    }, args=args, full=args.repeats >= 5, why_not="fewer than 5 repeats")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
