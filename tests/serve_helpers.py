"""Shared set-up for the service tests: a small annotated index, a real uvicorn server on loopback."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from pdf_factory import rich_pdf

ROOT = Path(__file__).resolve().parents[1]


def build_index(root: Path, pdf_dir: Path) -> Path:
    """Two small generated reports, indexed and annotated with the no-model defaults."""
    from trident_local.annotate import annotation_stage
    from trident_local.index import Index

    pdf_dir.mkdir(parents=True, exist_ok=True)
    pdfs = [rich_pdf(pdf_dir / "solar.pdf", topic="solar"), rich_pdf(pdf_dir / "wind.pdf", topic="wind")]
    idx = Index.create(root)
    idx.doc_stages.append(annotation_stage(idx))
    rep = idx.add(pdfs, workers=1)
    assert not rep.failed, rep.failed
    return root


def copy_index(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def die_with_parent() -> None:
    """``preexec_fn`` for a server the tests start in its own session: the kernel sends it SIGTERM when the
    test process dies (a killed pytest run left its vLLM server, 6 GB, running on the machine)."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not become ready")


@contextmanager
def uvicorn_thread(app) -> Iterator[str]:
    """The app under a real uvicorn server in this process (for the browser tests)."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url)
        yield url
    finally:
        server.should_exit = True
        t.join(30)


def serve_process(index: Path, port: int, *extra: str, env: dict | None = None) -> subprocess.Popen:
    """`trident serve` as a child process (so it can be killed with SIGKILL)."""
    import os

    e = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'kernels'}", "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "trident_local.cli", "serve", "--index", str(index), "--port", str(port), *extra],
        cwd=ROOT, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )


def wait_job(client, job_id: str, timeout: float = 300.0, headers: dict | None = None) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/api/jobs/{job_id}", headers=headers or {}).json()
        if job["state"] not in ("queued", "running"):
            return job
        time.sleep(0.3)
    raise TimeoutError(f"job {job_id} did not finish")


def stop_group(proc: subprocess.Popen, grace_s: float = 60.0) -> None:
    """SIGTERM a child started with ``start_new_session=True`` and its process group; SIGKILL after ``grace_s``."""
    import os
    import signal

    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def hold_first_index_until_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first file a job indexes waits (30 s at most) until its job is asked to cancel, so that the cancel
    lands while the file is being read however fast the machine reads it (a 300-page file alone raced it)."""
    from trident_local.serve.engine import Engine

    real, held = Engine.index_file, threading.Event()

    def index_file(self, name: str, path, control):
        if not held.is_set():
            held.set()
            deadline = time.monotonic() + 30
            while not control.should_stop() and time.monotonic() < deadline:
                time.sleep(0.01)
        return real(self, name, path, control)

    monkeypatch.setattr(Engine, "index_file", index_file)
