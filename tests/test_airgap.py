"""Air-gapped, proven: `trident index`, `ask`, `search` and a `trident serve` session (upload, ask, /v1)
run with every outbound socket refused (tests/airgap/sitecustomize.py, loaded by each process) and
without the hub's offline switches; nothing may try to reach beyond loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pdf_factory import rich_pdf, text_pdf
from serve_helpers import ROOT, die_with_parent, free_port, wait_job, wait_ready

pytestmark = pytest.mark.integration

AIRGAP = Path(__file__).parent / "airgap"
OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")


def _env(log: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_SWITCHES}
    env.update(PYTHONPATH=os.pathsep.join(map(str, [AIRGAP, ROOT, ROOT / "kernels"])), TRIDENT_NET_LOG=str(log))
    return env


def _trident(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "trident_local.cli", *args], env=env, capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


def test_the_refusal_itself_works(tmp_path: Path) -> None:
    log = tmp_path / "net.log"
    code = "import socket\ntry:\n    socket.create_connection(('192.0.2.1', 443), timeout=1)\nexcept OSError:\n    pass"
    subprocess.run([sys.executable, "-c", code], env=_env(log), check=True, timeout=60)
    assert "192.0.2.1" in log.read_text()


def test_cli_and_service_never_reach_beyond_loopback(tmp_path: Path) -> None:
    log = tmp_path / "net.log"
    env = _env(log)
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    rich_pdf(pdfs / "solar.pdf", topic="solar")
    index = tmp_path / "idx"
    _trident(env, "index", str(pdfs), "--index", str(index), "--workers", "1")
    assert "South" in _trident(env, "ask", "Which region led with 2,900 megawatts?", "--index", str(index)).stdout
    _trident(env, "search", "solar capacity by region", "--index", str(index))

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "trident_local.cli", "serve", "--index", str(index),
                               "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc=server)
        with httpx.Client(base_url=url, timeout=120) as c:
            assert c.get("/").status_code == 200 and c.get("/static/app.js").status_code == 200
            pdf = text_pdf(tmp_path / "pump.pdf", ["Pump manual. The impeller is replaced every 9 months."])
            up = c.post("/api/indexes/idx/documents", files={"file": ("pump.pdf", pdf.read_bytes(), "application/pdf")})
            assert up.status_code == 202, up.text
            assert wait_job(c, up.json()["job"]["job_id"])["state"] == "done"
            ask = c.post("/api/indexes/idx/ask", json={"question": "How often is the impeller replaced?"})
            assert ask.status_code == 200 and ask.json()["answer"]["citations"]
            chat = c.post("/v1/chat/completions", json={"model": "trident/idx", "messages": [
                {"role": "user", "content": "Which region led with 2,900 megawatts?"}]})
            assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    attempts = log.read_text() if log.exists() else ""
    assert attempts == "", attempts
