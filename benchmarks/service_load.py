"""Load on `trident serve` (loopback only): N clients ask for T seconds while one client uploads PDFs.

    .venv/bin/python benchmarks/service_load.py --clients 1 8 32 --seconds 15 --pdfs 20

Starts ``trident serve`` on a free loopback port over a fresh index of the sample PDFs
(no-model default); then, for each N, N threads ask questions in a loop for T seconds while
one thread uploads its share of --pdfs small generated PDFs and waits for their indexing job. Reported per N: requests, requests/s, p50/p95/p99
latency, errors (any non-200 answer or transport error), pages indexed during the run; and
at the end the index is checked: every document listed, every stage done, the pools fresh,
every uploaded document findable by its unique phrase (generated 3-page PDFs). Exit status 1 on
any error or a damaged index. Bounded: T <= 120 s, N <= 64, PDFs <= 50. --out also writes the JSON.

Recorded (results/service_load.json) with at least 32 clients at the last level, T >= 15 s and
20 PDFs.
"""

from __future__ import annotations

import argparse
import json
import os
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


def run_level(url: str, n: int, seconds: float, pdfs: list[Path]) -> dict:
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    upload_info: dict = {}

    def asker(k: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as c:
            i = k
            while not stop.is_set():
                q = QUESTIONS[i % len(QUESTIONS)]
                i += 1
                t0 = time.perf_counter()
                try:
                    r = c.post("/api/indexes/idx/ask", json={"question": q})
                    ok = r.status_code == 200
                    err = "" if ok else f"{r.status_code}: {r.text[:120]}"
                except httpx.HTTPError as e:
                    ok, err = False, f"{type(e).__name__}: {e}"
                dt = time.perf_counter() - t0
                with lock:
                    (lat.append(dt) if ok else errors.append(err))

    def uploader() -> None:
        with httpx.Client(base_url=url, timeout=600) as c:
            t0 = time.perf_counter()
            files = [("file", (p.name, p.read_bytes(), "application/pdf")) for p in pdfs]
            r = c.post("/api/indexes/idx/documents", files=files)
            if r.status_code != 202:
                errors.append(f"upload {r.status_code}: {r.text[:200]}")
                return
            job = wait_job(c, r.json()["job"]["job_id"])
            upload_info.update(state=job["state"], pages=job["progress"]["pages_done"],
                               seconds=time.perf_counter() - t0)

    up = threading.Thread(target=uploader)
    askers = [threading.Thread(target=asker, args=(k,)) for k in range(n)]
    t0 = time.perf_counter()
    up.start()
    for t in askers:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in askers:
        t.join()
    wall = time.perf_counter() - t0
    up.join()  # the indexing job finishes (may outlast T)
    return {"clients": n, "seconds": round(wall, 1), "requests": len(lat), "rps": round(len(lat) / wall, 2),
            "p50_ms": round(1000 * pct(lat, 50), 1), "p95_ms": round(1000 * pct(lat, 95), 1),
            "p99_ms": round(1000 * pct(lat, 99), 1), "errors": len(errors), "error_samples": errors[:5],
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--pdfs", type=int, default=20, help="PDFs uploaded during the whole run (split over levels)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if a.seconds > 120 or max(a.clients) > 64 or a.pdfs > 50:
        ap.error("bounded: --seconds <= 120, --clients <= 64, --pdfs <= 50")
    tmp = Path(tempfile.mkdtemp(prefix="trident-load-"))
    index, port = tmp / "idx", free_port()
    url = f"http://127.0.0.1:{port}"
    pdfs = [make_pdf(tmp / f"load{i:03d}.pdf", i) for i in range(a.pdfs)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'kernels'}", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "trident_local.cli", "serve", "--index", str(index), "--port",
                             str(port), "--add", str(ROOT / "samples")], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=open(tmp / "server.log", "w"))  # noqa: SIM115
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
            c.post("/api/indexes/idx/ask", json={"question": QUESTIONS[0]}, timeout=300)  # load the models once
        per = max(1, a.pdfs // len(a.clients))
        for k, n in enumerate(a.clients):
            chunk = pdfs[k * per:(k + 1) * per] if k < len(a.clients) - 1 else pdfs[k * per:]
            rows.append(run_level(url, n, a.seconds, chunk))
            print(json.dumps(rows[-1]), flush=True)
        check = check_index(url, index, a.pdfs)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    load = os.getloadavg()
    result = {"rows": rows, "index_check": check, "pdfs": a.pdfs, "cpus": os.cpu_count(),
              "loadavg_at_end": [round(x, 2) for x in load]}
    columns = ["clients", "req", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors", "pages indexed"]
    cells = [[str(v) for v in (r["clients"], r["requests"], r["rps"], r["p50_ms"], r["p95_ms"], r["p99_ms"],
                               r["errors"], r["upload"].get("pages", 0))] for r in rows]
    widths = [7, 6, 7, 8, 8, 8, 6, 13]
    print("\n" + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for c in cells:
        print(" ".join(f"{v:>{w}}" for v, w in zip(c, widths, strict=True)))
    print(f"index intact: {check['intact']} ({check['documents']} documents; {check})")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, indent=2) + "\n")
    write_result("service_load", result, {
        "title": f"trident serve, {a.seconds:g} s per level, {a.pdfs} PDFs uploaded and indexed meanwhile",
        "columns": columns,
        "rows": cells,
        "notes": f"Index afterwards: intact {check['intact']}, {check['documents']} documents; unfinished "
                 f"{len(check['unfinished'])}, stale pools {len(check['stale_pools'])}, uploads not found "
                 f"{len(check['uploads_not_found'])}.",
    }, args=a, full=max(a.clients) >= 32 and a.seconds >= 15 and a.pdfs >= 20,
        why_not="fewer clients, seconds or PDFs than --clients 1 8 32 --seconds 15 --pdfs 20")
    if not check["intact"] or any(r["errors"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
