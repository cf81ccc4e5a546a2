"""Faults against `trident serve` as a real process: a client vanishing mid-upload, kill -9 mid-upload
and mid-index, then a restart: the index opens, finished documents are there, the job resumes."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import httpx
import pytest
from pdf_factory import text_pdf
from serve_helpers import free_port, serve_process, wait_job, wait_ready

pytestmark = pytest.mark.integration


def _partial_upload(port: int, declared: int = 5_000_000) -> socket.socket:
    """Send the headers and the first bytes of a large multipart upload, then stop sending."""
    s = socket.create_connection(("127.0.0.1", port))
    head = (b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pdf\"\r\n"
            b"Content-Type: application/pdf\r\n\r\n%PDF-1.7\n" + b"0" * 200_000)
    s.sendall(b"POST /api/indexes/idx/documents HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Type: multipart/form-data; boundary=B\r\nContent-Length: " + str(declared).encode() +
              b"\r\n\r\n" + head)
    return s


def _partials(index: Path) -> list[Path]:
    d = index / "uploads" / ".partial"
    return list(d.iterdir()) if d.is_dir() else []


@pytest.fixture
def pdfs(tmp_path: Path) -> list[Path]:
    return [text_pdf(tmp_path / f"doc{i}.pdf", [f"Document {i}. The valve number is {1000 + i}.", f"Page two of {i}."])
            for i in range(4)]


def test_client_disconnect_mid_upload_keeps_nothing(tmp_path: Path) -> None:
    port, index = free_port(), tmp_path / "idx"
    first = text_pdf(tmp_path / "first.pdf", ["Added at start-up with --add."])
    proc = serve_process(index, port, "--add", str(first))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc=proc)
        with httpx.Client(base_url=url, timeout=60) as c:
            (job,) = c.get("/api/jobs").json()["jobs"]
            assert wait_job(c, job["job_id"])["state"] == "done"
        s = _partial_upload(port)
        deadline = time.monotonic() + 30
        while not _partials(index) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _partials(index), "the upload did not start streaming to disk"
        s.close()
        deadline = time.monotonic() + 30
        while _partials(index) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _partials(index) == []
        docs = httpx.get(f"{url}/api/indexes/idx/documents").json()["documents"]
        assert [d["file_name"] for d in docs] == ["first.pdf"]
        assert httpx.get(f"{url}/health").status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after shutting down
        assert '"msg": "stopped"' in proc.stderr.read()  # the lifespan shutdown ran: jobs checkpointed


def test_kill_9_mid_upload_and_mid_index_then_restart_resumes(tmp_path: Path, pdfs: list[Path]) -> None:
    port, index = free_port(), tmp_path / "idx"
    slow = {"TRIDENT_SERVE_INDEX_PAUSE_S": "1.5"}  # leave time to kill between files
    proc = serve_process(index, port, env=slow)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc=proc)
        files = [("file", (p.name, p.read_bytes(), "application/pdf")) for p in pdfs]
        job_id = httpx.post(f"{url}/api/indexes/idx/documents", files=files, timeout=60).json()["job"]["job_id"]
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            j = httpx.get(f"{url}/api/jobs/{job_id}").json()
            if j["progress"]["files_done"] >= 1:
                break
            time.sleep(0.2)
        s = _partial_upload(port)  # and an upload in flight
        deadline = time.monotonic() + 30
        while not _partials(index) and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.kill()
        proc.wait(30)
        s.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert 1 <= j["progress"]["files_done"] < len(pdfs), j

    proc = serve_process(index, port)
    try:
        wait_ready(url, proc=proc)
        with httpx.Client(base_url=url, timeout=60) as c:
            done_before = {f["doc_id"] for f in j["files"] if f["status"] == "done"}
            have = {d["doc_id"] for d in c.get("/api/indexes/idx/documents").json()["documents"]}
            assert done_before <= have  # finished documents survived the kill
            assert _partials(index) == []  # the killed upload left nothing behind
            job = wait_job(c, job_id)
            assert job["state"] == "done" and job["resumed"] == 1, job
            assert all(f["status"] == "done" for f in job["files"])
            docs = c.get("/api/indexes/idx/documents").json()["documents"]
            assert sorted(d["file_name"] for d in docs) == [p.name for p in pdfs]
            # every document is searchable after the restart: its unique number finds its first page
            doc3 = next(d["doc_id"] for d in docs if d["file_name"] == "doc3.pdf")
            hits = c.post("/api/indexes/idx/search", json={"question": "valve number 1003", "k": 1}).json()["hits"]
            assert (hits[0]["doc_id"], hits[0]["page"]) == (doc3, 1)
            ans = c.post("/api/indexes/idx/ask", json={"question": "What is the valve number 1003?"})
            assert ans.status_code == 200 and ans.json()["answer"]["citations"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
