"""Load on `trident serve` (loopback only): N clients ask for T seconds while one client uploads PDFs.

    .venv/bin/python benchmarks/service_load.py --clients 1 8 32 --seconds 15 --pdfs 20
    .venv/bin/python benchmarks/service_load.py --index /work/idx/fb \\
        --questions ../shared/data/financebench-dev/dataset.json --clients 32 128 256 --seconds 60 --pdfs 0 \\
        --route both

Starts ``trident serve`` on a free loopback port over a fresh index of the sample PDFs (or over a
copy of ``--index``; no-model default); then, for each N, N asyncio clients ask questions in a
loop for T seconds (through ``/api/indexes/idx/ask``, ``/v1/chat/completions`` or, with ``--route
both``, half each) while one client uploads its share of --pdfs small generated PDFs and waits for
their indexing job. A client that gets 429 waits its ``Retry-After`` and asks again, as OpenAI's
clients do. A separate process pings ``/health`` every 0.1 s. Reported per N: answers, answers/s,
p50/p95/p99 latency of the 200s, 429s, errors by status (anything but 200 and 429, transport errors
included), ``/health`` p50/p99, the server's peak RSS (its worker processes included), pages indexed
during the run; at the end the index is checked: every document listed, every stage done, the pools
fresh, every uploaded document findable by its unique phrase (generated 3-page PDFs). With
``--questions`` (a JSON list of strings, or of objects with ``question`` and ``doc_id``, such as a
FinanceBench file) each ask is scoped to its question's document. Exit status 1 on any error or a
damaged index. Bounded: T <= 120 s, N <= 256, PDFs <= 50. --out also writes the JSON.

Recorded (results/service_load.json) with at least 32 clients at the last level, T >= 15 s and
20 PDFs; with --index (results/service_load_filings.json) at 256 clients and T >= 60 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pymupdf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import write_result  # noqa: E402

QUESTIONS = ["What was Helios Grid's revenue in the Coastal region in 2023?", "Who is the chief executive?",
             "How many customers were served?", "What does sparse page retrieval improve?",
             "Which region grew fastest?", "What risks are named in the report?"]


def make_pdf(path: Path, i: int) -> Path:
    doc = pymupdf.open()
    for p in range(3):
        doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 545, 790), f"Load document {i}, page {p + 1}. "
                                      f"The inspection code of unit {i} is LD{i:04d}X. " + "Filler text. " * 80,
                                      fontsize=10)
    doc.save(path)
    return path


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_job(c: httpx.Client, job_id: str, timeout: float = 1800) -> dict:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        j = c.get(f"/api/jobs/{job_id}").json()
        if j["state"] not in ("queued", "running"):
            return j
        time.sleep(0.5)
    raise TimeoutError(job_id)


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children (the ask workers), MB."""
    total = 0
    pids = [pid]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                pids.append(int(stat.parent.name))
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def ping_health(url: str, stop, out) -> None:
    """In its own process: GET /health every 0.1 s until ``stop`` is set; latencies (s) into ``out``."""
    lat = []
    with httpx.Client(base_url=url, timeout=60) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                ok = c.get("/health").status_code == 200
            except httpx.HTTPError:
                ok = False
            lat.append(time.perf_counter() - t0 if ok else float("inf"))
            time.sleep(0.1)
    out.put(lat)


async def _clients(url: str, n: int, seconds: float, questions: list[dict], route: str, rec: dict) -> None:
    import asyncio

    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=n + 8, max_keepalive_connections=n + 8)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as c:

        async def client(k: int) -> None:
            i = k
            v1 = route == "v1" or (route == "both" and k % 2 == 1)
            while time.monotonic() < deadline:
                q = questions[i % len(questions)]
                i += 1
                docs = [q["doc_id"]] if q.get("doc_id") else None
                if v1:
                    path, body = "/v1/chat/completions", {"model": "trident/idx", "messages": [
                        {"role": "user", "content": q["question"]}], **({"docs": docs} if docs else {})}
                else:
                    path, body = "/api/indexes/idx/ask", {"question": q["question"], "docs": docs}
                t0 = time.perf_counter()
                try:
                    r = await c.post(path, json=body)
                    status, text, wait = r.status_code, r.text[:160], r.headers.get("retry-after")
                except httpx.HTTPError as e:
                    status, text, wait = type(e).__name__, str(e)[:160], None
                dt = time.perf_counter() - t0
                if status == 200:
                    rec["lat"].append(dt)
                    rec["by_route"][path] = rec["by_route"].get(path, 0) + 1
                elif status == 429:
                    rec["429"] += 1
                    await asyncio.sleep(min(float(wait or 1), max(0.0, deadline - time.monotonic())))
                else:
                    rec["errors"][str(status)] = rec["errors"].get(str(status), 0) + 1
                    rec["samples"].append(f"{status}: {text}")

        await asyncio.gather(*(client(k) for k in range(n)))


def run_level(url: str, n: int, seconds: float, pdfs: list[Path], questions: list[dict], route: str,
              server_pid: int) -> dict:
    import asyncio
    import multiprocessing as mp

    rec: dict = {"lat": [], "429": 0, "errors": {}, "samples": [], "by_route": {}}
    upload_info: dict = {}
    done = threading.Event()
    rss = [rss_mb(server_pid)]

    def uploader() -> None:
        if not pdfs:
            return
        with httpx.Client(base_url=url, timeout=600) as c:
            t0 = time.perf_counter()
            files = [("file", (p.name, p.read_bytes(), "application/pdf")) for p in pdfs]
            r = c.post("/api/indexes/idx/documents", files=files)
            if r.status_code != 202:
                rec["errors"]["upload"] = 1
                rec["samples"].append(f"upload {r.status_code}: {r.text[:200]}")
                return
            job = wait_job(c, r.json()["job"]["job_id"])
            upload_info.update(state=job["state"], pages=job["progress"]["pages_done"],
                               seconds=time.perf_counter() - t0)

    def sampler() -> None:
        while not done.wait(1.0):
            rss.append(rss_mb(server_pid))

    ctx = mp.get_context("spawn")
    stop, out = ctx.Event(), ctx.Queue()
    pinger = ctx.Process(target=ping_health, args=(url, stop, out))
    pinger.start()
    up, samp = threading.Thread(target=uploader), threading.Thread(target=sampler)
    t0 = time.perf_counter()
    up.start()
    samp.start()
    asyncio.run(_clients(url, n, seconds, questions, route, rec))
    wall = time.perf_counter() - t0
    stop.set()
    health = out.get(timeout=120)
    pinger.join(30)
    up.join()  # the indexing job finishes (may outlast T)
    done.set()
    samp.join()
    lat = rec["lat"]
    return {"clients": n, "route": route, "seconds": round(wall, 1), "requests": len(lat),
            "rps": round(len(lat) / wall, 2), "p50_ms": round(1000 * pct(lat, 50), 1),
            "p95_ms": round(1000 * pct(lat, 95), 1), "p99_ms": round(1000 * pct(lat, 99), 1),
            "rejected_429": rec["429"], "errors": sum(rec["errors"].values()), "errors_by_status": rec["errors"],
            "error_samples": rec["samples"][:5], "answers_by_route": rec["by_route"],
            "health_n": len(health), "health_p50_ms": round(1000 * pct(health, 50), 1),
            "health_p99_ms": round(1000 * pct(health, 99), 1), "server_rss_mb": round(max(rss)),
            "upload": upload_info}


def check_index(url: str, index: Path, expected: int) -> dict:
    from trident_local.index import Index

    idx = Index.open(index)
    entries = idx.store.entries(stages=[])
    unfinished = [e.file_name for e in entries if not all(e.stages.values())]
    stale = [p for p in idx.config.pools if idx.pool(p).is_stale()]
    with httpx.Client(base_url=url, timeout=120) as c:
        listed = len(c.get("/api/indexes/idx/documents").json()["documents"])
        missing = []
        for i in range(expected):
            hits = c.post("/api/indexes/idx/search", json={"question": f"inspection code LD{i:04d}X", "k": 1,
                                                           "pool": "bm25"}).json()["hits"]
            name = idx.store.manifest.documents[hits[0]["doc_id"]].file_name if hits else ""
            if name != f"load{i:03d}.pdf":
                missing.append(i)
    return {"documents": len(entries), "listed": listed, "unfinished": unfinished, "stale_pools": stale,
            "uploads_not_found": missing, "intact": not (unfinished or stale or missing) and listed == len(entries)}


def load_questions(path: Path | None) -> list[dict]:
    if path is None:
        return [{"question": q} for q in QUESTIONS]
    rows = json.loads(path.read_text())
    return [{"question": r} if isinstance(r, str) else {"question": r["question"], "doc_id": r.get("doc_id")}
            for r in rows]


def start_server(index: Path, port: int, tmp: Path, add: bool, ask_workers: int | None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'kernels'}", "HF_HUB_OFFLINE": "1"}
    if ask_workers is not None:
        env["TRIDENT_SERVE_ASK_WORKERS"] = str(ask_workers)
    extra = ["--add", str(ROOT / "samples")] if add else []
    return subprocess.Popen([sys.executable, "-m", "trident_local.cli", "serve", "--index", str(index), "--port",
                             str(port), *extra], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(tmp / "server.log", "w"))  # noqa: SIM115


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--pdfs", type=int, default=20, help="PDFs uploaded during the whole run (split over levels)")
    ap.add_argument("--index", type=Path, default=None, help="serve a copy of this index (default: the samples)")
    ap.add_argument("--questions", type=Path, default=None, help="JSON: questions (with doc_id: scoped asks)")
    ap.add_argument("--route", choices=["api", "v1", "both"], default="api")
    ap.add_argument("--ask-workers", type=int, default=None, help="the server's ask_workers (default: its own)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if a.seconds > 120 or max(a.clients) > 256 or a.pdfs > 50:
        ap.error("bounded: --seconds <= 120, --clients <= 256, --pdfs <= 50")
    questions = load_questions(a.questions)
    tmp = Path(tempfile.mkdtemp(prefix="trident-load-"))
    index, port = tmp / "idx", free_port()
    if a.index:
        shutil.copytree(a.index, index, ignore=shutil.ignore_patterns(".lock", "jobs.json", "serve_keys.json"))
    url = f"http://127.0.0.1:{port}"
    pdfs = [make_pdf(tmp / f"load{i:03d}.pdf", i) for i in range(a.pdfs)]
    proc = start_server(index, port, tmp, add=a.index is None, ask_workers=a.ask_workers)
    rows = []
    try:
        with httpx.Client(base_url=url, timeout=10) as c:
            for _ in range(600):
                try:
                    if c.get("/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.5)
            for j in c.get("/api/jobs").json()["jobs"]:
                wait_job(c, j["job_id"])
            for q in questions[:4]:  # load the models (in every ask worker) once
                c.post("/api/indexes/idx/ask", json={"question": q["question"]}, timeout=300)
        per = max(1, a.pdfs // len(a.clients))
        for k, n in enumerate(a.clients):
            chunk = pdfs[k * per:(k + 1) * per] if k < len(a.clients) - 1 else pdfs[k * per:]
            rows.append(run_level(url, n, a.seconds, chunk, questions, a.route, proc.pid))
            print(json.dumps(rows[-1]), flush=True)
        check = check_index(url, index, a.pdfs)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    load = os.getloadavg()
    result = {"rows": rows, "index_check": check, "pdfs": a.pdfs, "cpus": os.cpu_count(),
              "loadavg_at_end": [round(x, 2) for x in load]}
    columns = ["clients", "answers", "ans/s", "p50 ms", "p95 ms", "p99 ms", "429s", "errors", "health p50",
               "health p99", "RSS MB", "pages indexed"]
    cells = [[str(v) for v in (r["clients"], r["requests"], r["rps"], r["p50_ms"], r["p95_ms"], r["p99_ms"],
                               r["rejected_429"], r["errors"], r["health_p50_ms"], r["health_p99_ms"],
                               r["server_rss_mb"], r["upload"].get("pages", 0))] for r in rows]
    widths = [7, 7, 6, 8, 8, 8, 6, 6, 10, 10, 7, 13]
    print("\n" + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for c in cells:
        print(" ".join(f"{v:>{w}}" for v, w in zip(c, widths, strict=True)))
    print(f"index intact: {check['intact']} ({check['documents']} documents; {check})")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, indent=2) + "\n")
    filings = a.index is not None
    write_result("service_load_filings" if filings else "service_load", result, {
        "title": f"trident serve, {a.seconds:g} s per level, route {a.route}, "
                 + (f"index {a.index.name} ({check['documents']} documents)" if filings else
                    f"{a.pdfs} PDFs uploaded and indexed meanwhile"),
        "columns": columns,
        "rows": cells,
        "notes": f"Index afterwards: intact {check['intact']}, {check['documents']} documents; unfinished "
                 f"{len(check['unfinished'])}, stale pools {len(check['stale_pools'])}, uploads not found "
                 f"{len(check['uploads_not_found'])}. Latency of the 200s; a client waits Retry-After after a "
                 "429. Load generator on the same machine.",
    }, args=a, full=(max(a.clients) >= 256 and a.seconds >= 60) if filings else
        (max(a.clients) >= 32 and a.seconds >= 15 and a.pdfs >= 20),
        why_not="fewer clients or seconds than --clients 32 128 256 --seconds 60" if filings else
        "fewer clients, seconds or PDFs than --clients 1 8 32 --seconds 15 --pdfs 20")
    if not check["intact"] or any(r["errors"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
