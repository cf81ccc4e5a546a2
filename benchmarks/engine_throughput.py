"""Engine throughput: the same requests through vLLM offline, vLLM's server and transformers.

The annotation and rerank requests go through vLLM offline, vLLM's server (concurrency sweep)
and transformers ``generate``, on one chat profile. Requests are the project's own: one page-annotation request per page of the
sample PDFs and one rerank request per question over those pages' records
(the prompts and JSON schemas the stages send). Reported per path:
requests/s, prompt and output tokens/s; for the server also TTFT, TPOT and ITL
p50/p95 from streamed replies (the metrics of ``vllm bench serve``); ratios
against transformers from the same run. Writes a table, JSON and a PNG of
throughput vs concurrency to --out (a folder, git-ignored under results/).

Run with the engine environment's python (vLLM is there; about 12 minutes on 2 cores):

    .venv-engine/bin/python benchmarks/engine_throughput.py --requests 16 --concurrency 1,4,16

The default profile is SmolLM2-135M-Instruct (real weights, ``smollm2-135m-instruct-vllm``).
Requests/s and output tokens/s can differ in ratio because the paths do not write the same
replies: vLLM's structured-output decoding stops at the schema's end, transformers' free decoding
runs on towards each stage's budget. A 135M model on 2 cores says little about a 7B model on a
GPU: there pass a profile with real weights (or one with ``load_format = "dummy"`` in its
[engine_args] and the real config) via ``--profile``.

Recorded (results/engine_throughput.json) with every path and at least 8 requests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "kernels")]

from _results import write_result  # noqa: E402

from trident_local.models.protocols import ChatRequest  # noqa: E402

QUESTIONS = [
    "What was the revenue of the Coastal region in 2023?",
    "Which table lists the recall of the retrieval methods?",
    "Who signed the annual report?",
    "How many pages does the method retrieve per question?",
]


def requests_for(n: int) -> list[ChatRequest]:
    """n requests, alternating page annotation (one per sample page) and rerank (one per question)."""
    from trident_local.annotate.model_calls import page_request
    from trident_local.docs.ingest import ingest_pdf
    from trident_local.rerank.model_rerank import rerank_request
    from trident_local.rerank.records import CandidateRecord

    pages = [p for pdf in sorted((ROOT / "samples").glob("*.pdf")) for p in ingest_pdf(pdf).pages]
    records = [
        CandidateRecord(f"p{p.number}", "d", p.number, 1.0 / (i + 1), section=p.section, text=" ".join(p.text.split())[:600])
        for i, p in enumerate(pages)
    ]
    out: list[ChatRequest] = []
    for i in range(n):
        if i % 2 == 0:
            out.append(page_request(pages[(i // 2) % len(pages)], None, with_caption=False))
        else:
            q = QUESTIONS[(i // 2) % len(QUESTIONS)]
            out.append(rerank_request(q, records, ["section", "text"], 3))
    return out


@dataclass
class PathResult:
    path: str
    concurrency: int | None
    requests: int
    seconds: float
    prompt_tokens: int
    output_tokens: int
    latency: dict[str, float] = field(default_factory=dict)  # ttft/tpot/itl p50/p95 in ms (server)

    def row(self) -> dict[str, Any]:
        s = max(self.seconds, 1e-9)
        return {
            "path": self.path,
            "concurrency": self.concurrency,
            "requests": self.requests,
            "seconds": round(self.seconds, 2),
            "req_per_s": round(self.requests / s, 3),
            "prompt_tok_per_s": round(self.prompt_tokens / s, 1),
            "output_tok_per_s": round(self.output_tokens / s, 1),
            **{k: round(v, 1) for k, v in self.latency.items()},
        }


def run_chat(path: str, chat: Any, reqs: list[ChatRequest]) -> PathResult:
    t0 = time.perf_counter()
    res = chat.chat(reqs)
    dt = time.perf_counter() - t0
    errors = [r.error for r in res if r.error]
    if errors:
        raise SystemExit(f"{path}: {len(errors)} failed requests, first: {errors[0]}")
    return PathResult(path, None, len(reqs), dt, sum(r.prompt_tokens for r in res), sum(r.completion_tokens for r in res))


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def stream_one(client: Any, model: str, req: ChatRequest) -> tuple[int, int, float, list[float]]:
    """(prompt tokens, output tokens, ttft, inter-token gaps) of one streamed request."""
    from trident_local.models.backends.openai_chat import OpenAIChat

    body = OpenAIChat.payload.__get__(_Shim(model))(req)
    body.update(stream=True, stream_options={"include_usage": True})
    t0 = time.perf_counter()
    first, last, gaps, usage = None, None, [], {}
    with client.stream("POST", "/chat/completions", json=body) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            usage = chunk.get("usage") or usage
            if chunk.get("choices") and chunk["choices"][0].get("delta", {}).get("content"):
                now = time.perf_counter()
                if first is None:
                    first = now
                else:
                    gaps.append(now - last)
                last = now
    return int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), (first or t0) - t0, gaps


class _Shim:
    """Enough of an OpenAIChat for its ``payload`` method (the same body the backend sends)."""

    def __init__(self, model: str):
        self.model, self.supports_json_schema, self.extra_body = model, True, {}


def run_server(base: str, model: str, reqs: list[ChatRequest], conc: int) -> PathResult:
    import httpx

    client = httpx.Client(base_url=base, timeout=3600)
    lock, rows = threading.Lock(), []

    def one(r: ChatRequest) -> None:
        t = time.perf_counter()
        out = stream_one(client, model, r)
        with lock:
            rows.append((*out, time.perf_counter() - t))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(conc) as pool:
        list(pool.map(one, reqs))
    dt = time.perf_counter() - t0
    ttft = [r[2] * 1000 for r in rows]
    itl = [g * 1000 for r in rows for g in r[3]]
    tpot = [(r[4] - r[2]) * 1000 / (r[1] - 1) for r in rows if r[1] > 1]
    lat = {f"{n}_p{int(q * 100)}_ms": pct(xs, q) for n, xs in (("ttft", ttft), ("tpot", tpot), ("itl", itl)) for q in (0.5, 0.95)}
    return PathResult("vllm-server", conc, len(reqs), dt, sum(r[0] for r in rows), sum(r[1] for r in rows), lat)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(profile: str, port: int) -> subprocess.Popen:
    import httpx

    proc = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "serve_vllm.sh"), profile, "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "PYTHON": sys.executable},
        stdout=sys.stderr,
        stderr=sys.stderr,
        start_new_session=True,
    )
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"server exited {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(2)


def table_cells(rows: list[dict[str, Any]]) -> dict[str, list]:
    """Columns (every key, in order of appearance) and rows of cells, as ``table`` prints them."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    return {"columns": cols, "rows": [["" if r.get(c) is None else str(r.get(c)) for c in cols] for r in rows]}


def table(rows: list[dict[str, Any]]) -> str:
    t = table_cells(rows)
    lines = [" | ".join(t["columns"]), " | ".join("---" for _ in t["columns"])]
    lines += [" | ".join(r) for r in t["rows"]]
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    srv = [r for r in rows if r["path"] == "vllm-server"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([r["concurrency"] for r in srv], [r["output_tok_per_s"] for r in srv], "o-", label="vLLM server")
    for r in rows:
        if r["path"] != "vllm-server":
            ax.axhline(r["output_tok_per_s"], ls="--", label=r["path"], color="C1" if r["path"] == "vllm-offline" else "C2")
    ax.set(xlabel="concurrent requests", ylabel="output tokens/s", xscale="log", title="Engine throughput")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="smollm2-135m-instruct-vllm", help="a vllm chat profile")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--max-tokens", type=int, default=0, help="cap every request's budget (0 = the stage's own)")
    ap.add_argument("--paths", default="transformers,offline,server")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "engine_throughput")
    args = ap.parse_args()
    from trident_local.models.profiles import build_model

    args.out.mkdir(parents=True, exist_ok=True)
    info = {"profile": args.profile, "requests": args.requests, "max_tokens": args.max_tokens,
            "load_avg": os.getloadavg(), "cpus": os.cpu_count()}
    rows: list[dict[str, Any]] = []

    def save() -> None:  # after every path, so a long run leaves what it measured
        (args.out / "engine_throughput.json").write_text(json.dumps({"run": info, "rows": rows}, indent=2))
        print(table(rows), flush=True)

    reqs = requests_for(args.requests)
    if args.max_tokens:  # the same cap on every path keeps the comparison fair
        for r in reqs:
            r.params.max_tokens = min(r.params.max_tokens, args.max_tokens)
    paths = args.paths.split(",")
    if "transformers" in paths:
        chat = build_model("chat", args.profile, backend="transformers", engine_args={})
        rows.append(run_chat("transformers", chat, reqs).row())
        save()
        del chat
    if "offline" in paths:
        chat = build_model("chat", args.profile)
        rows.append(run_chat("vllm-offline", chat, reqs).row())
        save()
        with contextlib.suppress(AttributeError):  # free its memory before the server takes its share
            chat.llm.llm_engine.engine_core.shutdown()
        del chat
    if "server" in paths:
        port = free_port()
        proc = start_server(args.profile, port)
        try:
            for c in (int(x) for x in args.concurrency.split(",")):
                rows.append(run_server(f"http://127.0.0.1:{port}/v1", args.profile, reqs, c).row())
                save()
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
    base = next((r for r in rows if r["path"] == "transformers"), None)
    for r in rows:
        if base:
            r["x_transformers_output_tok_s"] = round(r["output_tok_per_s"] / max(base["output_tok_per_s"], 1e-9), 2)
            r["x_transformers_req_s"] = round(r["req_per_s"] / max(base["req_per_s"], 1e-9), 2)
    info["load_avg_end"] = os.getloadavg()
    save()
    print(json.dumps(info))
    try:
        plot(rows, args.out / "engine_throughput.png")
    except ImportError:
        print("(matplotlib not installed: no PNG)", file=sys.stderr)
    write_result("engine_throughput", {"run": info, "rows": rows}, lambda: {
        "title": f"{args.requests} requests, profile {args.profile}"
                 + (f", max_tokens {args.max_tokens}" if args.max_tokens else ", each stage's max_tokens"),
        **table_cells(rows),
        "notes": "x_transformers_*: ratio to transformers generate (one request at a time) in the same run.",
    }, args=args, full=args.requests >= 8 and set(paths) >= {"transformers", "offline", "server"},
        why_not="fewer than 8 requests, or not every path")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
