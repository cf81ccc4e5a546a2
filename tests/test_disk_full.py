"""A full index volume (a small tmpfs): `trident index` stops with one line that says what ran out, where,
and that rerunning resumes, and the rerun matches a clean build; the service answers 507 with
Retry-After and its key and job writes never half-apply. Skipped where tmpfs cannot be mounted."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pdf_factory import text_pdf
from serve_helpers import ROOT, wait_job

pytestmark = pytest.mark.integration

TRIDENT = [sys.executable, "-m", "trident_local.cli"]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'kernels'}", "HF_HUB_OFFLINE": "1",
       "COLUMNS": "400"}  # the message is one line; a narrow terminal would wrap it
QUERIES = ["pump serial 41003", "valve pressure report 7", "maintenance interval gearbox"]


@pytest.fixture
def volume(tmp_path: Path) -> Iterator[Path]:
    vol = tmp_path / "vol"
    vol.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", str(vol)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield vol
    finally:
        subprocess.run(["umount", "-l", str(vol)], check=False)


def fill(vol: Path, leave: int) -> Path:
    """A filler file that leaves about ``leave`` bytes free on ``vol``."""
    filler = vol / "filler"
    free = os.statvfs(vol).f_bavail * os.statvfs(vol).f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


def corpus(d: Path, n: int = 16) -> Path:
    d.mkdir()
    for i in range(n):
        text_pdf(d / f"report{i:02d}.pdf", [
            f"Report {i}. The pump serial is {41000 + i}. " + "Valve pressure report and readings. " * 60,
            f"Maintenance interval for gearbox {i}: {6 + i} months. " + "Inspection notes follow. " * 60])
    return d


def hits(index: Path) -> list[list[tuple[str, int]]]:
    from trident_local.index import Index

    idx = Index.open(index)
    return [[(idx.store.manifest.documents[h.doc_id].file_name, h.page) for h in idx.search(q, pool="bm25", k=5)]
            for q in QUERIES]


def test_index_into_a_full_volume_is_one_line_and_a_rerun_resumes(volume: Path, tmp_path: Path) -> None:
    pdfs = corpus(tmp_path / "pdfs")
    cmd = [*TRIDENT, "index", str(pdfs), "--pools", "bm25", "--workers", "1", "--index"]
    clean = subprocess.run([*cmd, str(tmp_path / "clean")], env=ENV, capture_output=True, text=True, timeout=600)
    assert clean.returncode == 0, clean.stderr[-2000:]
    filler = fill(volume, 120_000)
    full = subprocess.run([*cmd, str(volume / "idx")], env=ENV, capture_output=True, text=True, timeout=600)
    said = full.stdout + full.stderr
    assert full.returncode != 0, said[-2000:]
    assert "Traceback" not in said and "Errno 28" not in said, said[-3000:]
    lines = [ln for ln in said.splitlines() if "no space left" in ln]
    assert len(lines) == 1 and "run the same command again" in lines[0] and "resumes" in lines[0], said[-2000:]
    assert str(volume / "idx") in lines[0], said[-2000:]  # where
    filler.unlink()
    again = subprocess.run([*cmd, str(volume / "idx")], env=ENV, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert hits(volume / "idx") == hits(tmp_path / "clean")


def test_service_answers_507_while_the_volume_is_full(volume: Path, tmp_path: Path) -> None:
    from trident_local.serve import Settings, create_app
    from trident_local.serve.engine import ensure_index

    index = volume / "idx"
    ensure_index(index)
    app = create_app(Settings(indexes={"r": str(index)}, api_key="admin-secret-0123456789"))
    admin = {"Authorization": "Bearer admin-secret-0123456789"}
    pdf = text_pdf(tmp_path / "a.pdf", ["A small report about pumps."]).read_bytes()
    with TestClient(app, base_url="http://127.0.0.1") as c:
        made = c.post("/api/keys", json={"scope": "read"}, headers=admin).json()
        filler = fill(volume, 0)
        up = c.post("/api/indexes/r/documents", files={"file": ("a.pdf", pdf, "application/pdf")}, headers=admin)
        assert up.status_code == 507 and up.headers["retry-after"], up.text
        assert "no space left" in up.json()["error"] and str(volume) not in up.text
        key = c.post("/api/keys", json={"scope": "write"}, headers=admin)
        assert key.status_code == 507, key.text
        gone = c.delete(f"/api/keys/{made['key_id']}", headers=admin)
        assert gone.status_code == 507, gone.text
        assert [k["key_id"] for k in c.get("/api/keys", headers=admin).json()["keys"]] == ["startup", made["key_id"]]
        assert c.get("/api/indexes", headers={"Authorization": f"Bearer {made['key']}"}).status_code == 200
        filler.unlink()
        up = c.post("/api/indexes/r/documents", files={"file": ("a.pdf", pdf, "application/pdf")}, headers=admin)
        assert up.status_code == 202, up.text
        assert wait_job(c, up.json()["job"]["job_id"], headers=admin)["state"] == "done"
        assert c.delete(f"/api/keys/{made['key_id']}", headers=admin).status_code == 200
