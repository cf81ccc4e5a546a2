"""Shared-engine batching: concurrent callers through one chat engine, serialised vs batched.

What the service does with its chat engine. C callers (request threads) each send
their requests one at a time, as an ask does. Two ways to share one engine:

* ``serial``  - a lock around the engine: one request per engine call (the safe
  way to share a non-thread-safe engine without batching);
* ``batched`` - ``trident_local.models.batcher.BatchingChat``: whatever is
  queued while the engine runs becomes the next batch (what ``trident serve`` uses).

Same requests (the project's page-annotation and rerank prompts), same engine,
same process, modes interleaved per concurrency level; prefix caching is turned
off so that a repeated prompt cannot make the later mode look faster. Reports
requests/s, output tokens/s, per-request latency p50/p95, the mean batch size,
and the batched/serial throughput ratio; writes a table and JSON (to --out, a folder,
git-ignored under results/). Default profile: SmolLM2-135M-Instruct on vLLM, 32 output tokens.

    .venv-engine/bin/python benchmarks/chat_batching.py --requests 32 --callers 1,4,16

Recorded (results/chat_batching.json) with at least 32 requests and the default --max-tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "kernels"), str(ROOT / "benchmarks")]

from _results import write_result  # noqa: E402
from engine_throughput import pct, requests_for, table, table_cells  # noqa: E402

from trident_local.models.batcher import BatchingChat, BatchPolicy  # noqa: E402
from trident_local.models.protocols import ChatRequest, ChatResult, SamplingParams  # noqa: E402


class Serialised:
    """One engine shared under a lock: every request its own engine call."""

    def __init__(self, inner: Any):
        self.inner, self._lock, self.calls = inner, threading.Lock(), 0

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        with self._lock:
            self.calls += 1
            return self.inner.chat(requests)


def run_mode(mode: str, engine: Any, reqs: list[ChatRequest], callers: int) -> dict[str, Any]:
    shared: Any = BatchingChat(engine, BatchPolicy()) if mode == "batched" else Serialised(engine)
    todo = iter(reqs)
    lock = threading.Lock()
    lat: list[float] = []
    toks = [0, 0]
    errors: list[str] = []

    def caller() -> None:
        while True:
            with lock:
                r = next(todo, None)
            if r is None:
                return
            t = time.perf_counter()
            (res,) = shared.chat([r])
            with lock:
                lat.append(time.perf_counter() - t)
                toks[0] += res.prompt_tokens
                toks[1] += res.completion_tokens
                if res.error:
                    errors.append(res.error)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        for f in [pool.submit(caller) for _ in range(callers)]:
            f.result()
    dt = time.perf_counter() - t0
    calls = shared.stats.engine_calls if isinstance(shared, BatchingChat) else shared.calls
    if isinstance(shared, BatchingChat):
        shared.close()
    if errors:
        raise SystemExit(f"{mode}: {len(errors)} failed requests, first: {errors[0]}")
    return {
        "mode": mode, "callers": callers, "requests": len(reqs), "seconds": round(dt, 2),
        "req_per_s": round(len(reqs) / dt, 3), "output_tok_per_s": round(toks[1] / dt, 1),
        "engine_calls": calls, "mean_batch": round(len(reqs) / max(calls, 1), 2),
        "latency_p50_s": round(pct(lat, 0.5), 3), "latency_p95_s": round(pct(lat, 0.95), 3),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="smollm2-135m-instruct-vllm", help="a chat profile (vllm backend here)")
    ap.add_argument("--requests", type=int, default=32, help="requests per mode and concurrency level")
    ap.add_argument("--callers", default="1,4,16", help="concurrent callers, comma-separated")
    ap.add_argument("--max-tokens", type=int, default=32, help="every request's output budget")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "chat_batching")
    args = ap.parse_args()

    from trident_local.models.profiles import build_model

    engine = build_model("chat", args.profile, enable_prefix_caching=False)
    reqs = requests_for(args.requests)
    for r in reqs:
        r.params = SamplingParams(max_tokens=args.max_tokens)
        r.json_schema = None  # the same decoding work in both modes; structured output is not measured here
    engine.chat(reqs[:2])  # warm-up: first-call compilation is not part of either mode
    rows: list[dict[str, Any]] = []
    load = os.getloadavg()[0]
    for callers in (int(c) for c in args.callers.split(",")):
        order = ("serial", "batched") if callers % 2 else ("batched", "serial")  # interleave
        got = {m: run_mode(m, engine, reqs, callers) for m in order}
        got["batched"]["ratio_vs_serial"] = round(got["batched"]["req_per_s"] / got["serial"]["req_per_s"], 2)
        rows += [got["serial"], got["batched"]]
        print(table(rows[-2:]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"profile": args.profile, "max_tokens": args.max_tokens, "load_before": round(load, 2),
              "load_after": round(os.getloadavg()[0], 2), "rows": rows}
    (args.out / "chat_batching.json").write_text(json.dumps(result, indent=2))
    print(table(rows))
    print(f"load average {result['load_before']} -> {result['load_after']}; wrote {args.out / 'chat_batching.json'}")
    write_result("chat_batching", result, lambda: {
        "title": f"{args.requests} requests per mode and level, profile {args.profile}, {args.max_tokens} output tokens",
        **table_cells(rows),
        "notes": f"Load average {result['load_before']} -> {result['load_after']}. ratio_vs_serial: batched / serial "
                 "requests/s at the same number of callers.",
    }, args=args, full=args.requests >= 32 and args.max_tokens == ap.get_default("max_tokens"),
        why_not="fewer than 32 requests or another --max-tokens")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
