"""Shared-engine batching: concurrent callers through one chat engine, three ways.

What the service does with its chat engine. C callers (request threads) each send
their requests one at a time, as an ask does. Three ways to share one engine:

* ``serial``  - vLLM's offline ``LLM`` under a lock: one request per engine call (the
  safe way to share a non-thread-safe engine without batching);
* ``batched`` - the offline ``LLM`` behind ``trident_local.models.batcher.BatchingChat``:
  whatever is queued while the engine runs becomes the next batch;
* ``async``   - vLLM's ``AsyncLLM`` (``trident_local.models.backends.vllm_async``):
  every caller adds its request to the running engine, which batches continuously
  (what ``trident serve`` uses for a vllm chat profile).

Same requests (the project's page-annotation and rerank prompts), same weights and
engine settings, same process (two engines: the offline one and the async one),
modes interleaved per concurrency level; prefix caching is turned off so that a
repeated prompt cannot make a later mode look faster. Reports requests/s, output
tokens/s, per-request latency p50/p95, the mean batch size (batched) or the most
requests in the engine at once (async), and each mode's throughput against serial;
writes a table and JSON. Default profile: SmolLM2-135M-Instruct on vLLM, 32 output tokens.

    .venv-engine/bin/python benchmarks/chat_batching.py --requests 32 --callers 1,4,16
    .venv/bin/python benchmarks/chat_batching.py --backend transformers --callers 1,4,16   # the batcher's own case

Recorded (results/chat_batching.json, results/chat_batching_transformers.json) with at least 32
requests and the default --max-tokens.
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


def run_mode(mode: str, engines: dict[str, Any], reqs: list[ChatRequest], callers: int) -> dict[str, Any]:
    if mode == "async":
        shared: Any = engines["async"]
        shared.max_inflight = 0
    else:
        shared = BatchingChat(engines["offline"], BatchPolicy()) if mode == "batched" else Serialised(engines["offline"])
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
    if isinstance(shared, BatchingChat):
        calls, batch = shared.stats.engine_calls, round(len(reqs) / max(shared.stats.engine_calls, 1), 2)
        shared.close()
    elif mode == "async":  # one engine call per request; the engine batches them itself
        calls, batch = len(reqs), shared.max_inflight
    else:
        calls, batch = shared.calls, 1.0
    if errors:
        raise SystemExit(f"{mode}: {len(errors)} failed requests, first: {errors[0]}")
    return {
        "mode": mode, "callers": callers, "requests": len(reqs), "seconds": round(dt, 2),
        "req_per_s": round(len(reqs) / dt, 3), "output_tok_per_s": round(toks[1] / dt, 1),
        "engine_calls": calls, "batch": batch,
        "latency_p50_s": round(pct(lat, 0.5), 3), "latency_p95_s": round(pct(lat, 0.95), 3),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="smollm2-135m-instruct-vllm", help="a chat profile (vllm backend here)")
    ap.add_argument("--backend", default="vllm", choices=("vllm", "transformers"),
                    help="vllm: serial, batched and async; transformers (in-process, no engine): serial and batched")
    ap.add_argument("--requests", type=int, default=32, help="requests per mode and concurrency level")
    ap.add_argument("--callers", default="1,4,16", help="concurrent callers, comma-separated")
    ap.add_argument("--max-tokens", type=int, default=32, help="every request's output budget")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "chat_batching")
    args = ap.parse_args()

    from trident_local.models.profiles import build_model

    if args.backend == "vllm":
        engines = {"offline": build_model("chat", args.profile, enable_prefix_caching=False),
                   "async": build_model("chat", args.profile, backend="vllm-async", enable_prefix_caching=False)}
        modes: tuple[str, ...] = ("serial", "batched", "async")
    else:  # a backend without an async engine: what the batcher is still there for
        engines = {"offline": build_model("chat", args.profile, backend=args.backend)}
        modes = ("serial", "batched")
    reqs = requests_for(args.requests)
    for r in reqs:
        r.params = SamplingParams(max_tokens=args.max_tokens)
        r.json_schema = None  # the same decoding work in every mode; structured output is not measured here
    for engine in engines.values():
        engine.chat(reqs[:2])  # warm-up: first-call work is not part of any mode
    rows: list[dict[str, Any]] = []
    load = os.getloadavg()[0]
    for level, callers in enumerate(int(c) for c in args.callers.split(",")):
        order = modes[level % len(modes):] + modes[:level % len(modes)]  # rotate which mode runs first
        got = {m: run_mode(m, engines, reqs, callers) for m in order}
        for m in modes[1:]:
            got[m]["ratio_vs_serial"] = round(got[m]["req_per_s"] / got["serial"]["req_per_s"], 2)
        if "async" in got:
            got["async"]["ratio_vs_batched"] = round(got["async"]["req_per_s"] / got["batched"]["req_per_s"], 2)
        rows += [got[m] for m in modes]
        print(table(rows[-len(modes):]), flush=True)
    if "async" in engines:
        engines["async"].close()
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"profile": args.profile, "backend": args.backend, "max_tokens": args.max_tokens, "load_before": round(load, 2),
              "load_after": round(os.getloadavg()[0], 2), "rows": rows}
    (args.out / "chat_batching.json").write_text(json.dumps(result, indent=2))
    print(table(rows))
    print(f"load average {result['load_before']} -> {result['load_after']}; wrote {args.out / 'chat_batching.json'}")
    name = "chat_batching" if args.backend == "vllm" else f"chat_batching_{args.backend}"
    write_result(name, result, lambda: {
        "title": f"{args.requests} requests per mode and level, profile {args.profile}, {args.max_tokens} output tokens",
        **table_cells(rows),
        "notes": f"Load average {result['load_before']} -> {result['load_after']}. ratio_vs_serial: the mode's "
                 "requests/s over serial's at the same number of callers; ratio_vs_batched: async over batched. "
                 "batch: mean requests per engine call (batched), most requests in the engine at once (async).",
    }, args=args, full=args.requests >= 32 and args.max_tokens == ap.get_default("max_tokens"),
        why_not="fewer than 32 requests or another --max-tokens")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
