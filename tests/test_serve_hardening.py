"""Regression tests for the service probe's defects D1-D12: each one failed before its fix."""

from __future__ import annotations

import io
import stat
import threading
import time
from pathlib import Path

import httpx
import pymupdf
import pytest
from fastapi.testclient import TestClient
from pdf_factory import corrupt_pdf, text_pdf
from PIL import Image, ImageDraw
from serve_helpers import (
    build_index,
    copy_index,
    free_port,
    hold_first_index_until_cancelled,
    wait_job,
    wait_ready,
)

from trident_local.docs.ingest import OCR_MAX_PIXELS, IngestCancelled, IngestControl, ingest_pdf
from trident_local.errors import IngestError
from trident_local.serve import Settings, create_app
from trident_local.serve.gate import Gate

pytestmark = pytest.mark.integration

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hardening")
    return build_index(d / "idx", d / "pdfs")


def _client(idx: Path, **settings) -> TestClient:
    return TestClient(create_app(Settings(indexes={"r": str(idx)}, **settings)), base_url=LOCAL)


@pytest.fixture
def client(built: Path, tmp_path: Path):
    idx = copy_index(built, tmp_path / "idx")
    with _client(idx) as c:
        c.index_dir = idx
        yield c


def _upload(c: TestClient, name: str, data: bytes, **kw) -> httpx.Response:
    return c.post("/api/indexes/r/documents", files={"file": (name, data, "application/pdf")}, **kw)


def _long_pdf(path: Path, pages: int = 300) -> Path:
    return text_pdf(path, [f"Long report page {i}. The pump serial number is {90000 + i}." for i in range(pages)])


class Recorder:
    """An OCR engine that records the images it is given (the pixel budget is what is tested)."""

    def __init__(self) -> None:
        self.sizes: list[tuple[int, int]] = []

    def available(self) -> bool:
        return True

    def ocr(self, image: Image.Image) -> str:
        self.sizes.append(image.size)
        return "recorded page text"


def _image_pdf(path: Path, pages: int, size_pt: float = 595.0) -> Path:
    """Pages that are only a picture (no text layer, not blank): the OCR path."""
    img = Image.new("RGB", (400, 200), "white")
    ImageDraw.Draw(img).text((20, 80), "INVOICE 4812", fill="black")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page(width=size_pt, height=size_pt).insert_image(
            pymupdf.Rect(10, 10, size_pt - 10, size_pt / 2), stream=buf.getvalue())
    doc.save(path)
    return path


# -- D1: a cancelled upload is not stuck -------------------------------------------------------------
def test_d1_cancelled_upload_can_be_uploaded_again(client: TestClient, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    hold_first_index_until_cancelled(monkeypatch)
    data = _long_pdf(tmp_path / "long.pdf").read_bytes()
    r = _upload(client, "long.pdf", data)
    assert r.status_code == 202, r.text
    job_id = r.json()["job"]["job_id"]
    assert client.post(f"/api/jobs/{job_id}/cancel").status_code == 200
    job = wait_job(client, job_id)
    assert job["state"] == "cancelled" and job["files"][0]["status"] == "cancelled", job
    doc_id = job["files"][0]["doc_id"]
    assert not (client.index_dir / "uploads" / doc_id).exists()  # the unindexed original is gone
    again = _upload(client, "long.pdf", data)
    assert again.status_code == 202 and again.json()["files"][0]["status"] == "stored", again.text
    assert wait_job(client, again.json()["job"]["job_id"])["state"] == "done"
    assert client.get(f"/api/indexes/r/documents/{doc_id}").status_code == 200


def test_d1_orphan_uploads_are_swept_at_start_and_deletable(built: Path, tmp_path: Path) -> None:
    idx = copy_index(built, tmp_path / "idx")
    old = idx / "uploads" / "0123456789abcdef"
    old.mkdir(parents=True)
    (old / "left.pdf").write_bytes(b"%PDF-1.7 left by a crash")
    with _client(idx) as c:
        assert not old.exists()  # no job will ever index it
        later = idx / "uploads" / "fedcba9876543210"
        later.mkdir()
        (later / "x.pdf").write_bytes(b"%PDF-1.7")
        assert c.delete("/api/indexes/r/documents/fedcba9876543210").json() == {"deleted": "fedcba9876543210"}
        assert not later.exists()
        assert c.delete("/api/indexes/r/documents/fedcba9876543210").status_code == 404


# -- D2: OCR cost is bounded, a running file can be cancelled, jobs take turns --------------------------
def test_d2_huge_page_is_ocrd_within_the_pixel_budget(tmp_path: Path) -> None:
    rec = Recorder()
    doc = ingest_pdf(_image_pdf(tmp_path / "poster.pdf", 1, size_pt=5000), ocr=rec)
    (w, h), = rec.sizes
    assert w * h <= OCR_MAX_PIXELS and doc.pages[0].ocr  # 193 Mpx at 200 dpi before


def test_d2_blank_pages_cost_no_ocr_and_the_page_cap_holds(tmp_path: Path) -> None:
    blank = pymupdf.open()
    for _ in range(500):
        blank.new_page()
    blank.save(tmp_path / "blank.pdf")
    rec = Recorder()
    doc = ingest_pdf(tmp_path / "blank.pdf", ocr=rec)
    assert rec.sizes == [] and doc.n_pages == 500
    capped = ingest_pdf(_image_pdf(tmp_path / "scan.pdf", 5), ocr=(rec := Recorder()),
                        control=IngestControl(ocr_max_pages=2))
    assert len(rec.sizes) == 2 and [p.ocr for p in capped.pages] == [True, True, False, False, False]
    assert any("OCR limit of 2" in w for w in capped.warnings)


def test_d2_ingestion_stops_between_pages(tmp_path: Path) -> None:
    seen: list[int] = []
    ctl = IngestControl(should_stop=lambda: len(seen) >= 3, on_page=seen.append)
    with pytest.raises(IngestCancelled, match="page 4 of 300"):
        ingest_pdf(_long_pdf(tmp_path / "long.pdf"), control=ctl)
    assert seen == [1, 2, 3]


def test_d2_a_small_upload_is_not_stuck_behind_a_long_job(tmp_path: Path) -> None:
    from trident_local.serve.jobs import JobFile, JobManager

    order: list[str] = []
    first = threading.Event()

    def runner(job, f):
        order.append(f.name)
        first.set()
        time.sleep(0.2)
        f.status, f.pages = "done", 1

    m = JobManager({"r": tmp_path}, {"index": runner})
    m.start()
    m.submit("r", "index", [JobFile(f"big{i}.pdf") for i in range(4)])
    assert first.wait(30)
    small = m.submit("r", "index", [JobFile("small.pdf")])
    deadline = time.monotonic() + 30
    while small.state != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    m.stop()
    assert small.state == "done" and order.index("small.pdf") <= 2, order


# -- D3, D5, D12: oversized page images, truncated files, private originals ------------------------------
def test_d3_oversized_page_image_is_a_png_not_a_500(client: TestClient, tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page(width=20000, height=20000).insert_text((100, 200), "A huge poster page with text.", fontsize=120)
    doc.save(tmp_path / "poster.pdf")
    r = _upload(client, "poster.pdf", (tmp_path / "poster.pdf").read_bytes())
    job = wait_job(client, r.json()["job"]["job_id"])
    png = client.get(f"/api/indexes/r/documents/{job['files'][0]['doc_id']}/pages/1.png")
    assert png.status_code == 200 and png.content[:4] == b"\x89PNG"
    img = Image.open(io.BytesIO(png.content))
    assert img.width * img.height <= 16_000_000


@pytest.mark.parametrize("keep", [600, 1 / 3, 0.9])
def test_d5_truncated_pdfs_are_refused(client: TestClient, tmp_path: Path, keep: float) -> None:
    whole = text_pdf(tmp_path / "three.pdf", ["First page.", "Second page.", "Third page."]).read_bytes()
    cut = whole[: int(keep if keep > 1 else len(whole) * keep)]
    r = _upload(client, "cut.pdf", cut)
    assert r.status_code == 422 and "truncated" in r.json()["error"], r.text
    with pytest.raises(IngestError, match="truncated"):  # the CLI refuses it the same way
        (tmp_path / "cut.pdf").write_bytes(cut)
        ingest_pdf(tmp_path / "cut.pdf")


def test_d12_uploaded_originals_are_private(client: TestClient, tmp_path: Path) -> None:
    r = _upload(client, "p.pdf", text_pdf(tmp_path / "p.pdf", ["Private original."]).read_bytes())
    stored = client.index_dir / r.json()["files"][0]["stored_as"]
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    wait_job(client, r.json()["job"]["job_id"])


# -- D4, D6: text that is not Unicode, answers too long to verify ---------------------------------------
@pytest.mark.parametrize("route,body", [
    ("ask", b'{"question": "\\ud800 solar revenue"}'),
    ("search", b'{"question": "\\ud800 solar revenue"}'),
    ("trace", b'{"question": "\\udfff wind"}'),
    ("verify", b'{"answer": "The South led [p. 2] \\ud800", "doc": "solar.pdf"}'),
])
def test_d4_lone_surrogates_are_a_400(client: TestClient, route: str, body: bytes) -> None:
    r = client.post(f"/api/indexes/r/{route}", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400 and "surrogate" in r.json()["error"], r.text


def test_d6_verify_answer_size_is_limited(client: TestClient) -> None:
    big = "The South region led with 2,900 megawatts [p. 2]. " * 500  # 25,000 characters
    r = client.post("/api/indexes/r/verify", json={"answer": big, "doc": "solar.pdf"})
    assert r.status_code == 413 and "limit is 20000" in r.json()["error"]


# -- D7, D8, D9: the browser edge ------------------------------------------------------------------------
def test_d7_foreign_hosts_and_cross_site_writes_are_refused(client: TestClient, tmp_path: Path) -> None:
    pdf = text_pdf(tmp_path / "x.pdf", ["Cross site upload body."]).read_bytes()
    assert client.get("/api/indexes", headers={"host": "evil.example"}).status_code == 400  # DNS rebinding
    assert client.get("/api/indexes", headers={"host": "localhost:8000"}).status_code == 200
    evil = _upload(client, "x.pdf", pdf, headers={"origin": "http://evil.example"})
    assert evil.status_code == 403 and "cross-site" in evil.json()["error"]
    assert _upload(client, "x.pdf", pdf, headers={"origin": "null"}).status_code == 403
    assert client.post("/api/indexes/r/ask", json={"question": "solar"},
                       headers={"sec-fetch-site": "cross-site"}).status_code == 403
    assert not any((client.index_dir / "uploads").glob("*/x.pdf"))
    own = _upload(client, "x.pdf", pdf, headers={"origin": LOCAL})  # the page's own origin
    assert own.status_code == 202
    wait_job(client, own.json()["job"]["job_id"])


def test_d7_allowed_hosts_setting(built: Path) -> None:
    with _client(built, allowed_hosts=["docs.intranet"]) as c:
        assert c.get("/health", headers={"host": "docs.intranet"}).status_code == 200
        assert c.get("/health", headers={"host": "127.0.0.1"}).status_code == 400


def test_d8_security_headers_and_no_cdn_docs(client: TestClient, built: Path) -> None:
    for path in ("/", "/static/app.js", "/api/indexes", "/api/indexes/nope"):
        h = client.get(path).headers
        assert "default-src 'self'" in h["content-security-policy"] and "frame-ancestors 'none'" in \
            h["content-security-policy"], path
        assert h["x-content-type-options"] == "nosniff" and h["x-frame-options"] == "DENY"
        assert h["referrer-policy"] == "no-referrer"
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404
    with _client(built, api_docs=True) as c:
        for page in ("/docs", "/redoc"):
            html = c.get(page).text
            assert "cdn.jsdelivr" not in html and "googleapis" not in html and "tiangolo" not in html
            for src in [s.split('"')[1] for s in html.split("src=")[1:] if s.startswith('"')]:
                assert src.startswith("/") and c.get(src).status_code == 200, src


def test_d9_only_health_and_the_page_are_open_with_keys(built: Path) -> None:
    with _client(built, api_key="admin-secret", api_docs=True) as c:
        assert c.get("/health").status_code == 200 and c.get("/").status_code == 200
        for path in ("/ready", "/openapi.json", "/metrics"):
            assert c.get(path).status_code == 401, path
        key = {"Authorization": "Bearer admin-secret"}
        assert c.get("/ready", headers=key).json()["ready"] is True
        assert "/api/indexes/{index}/ask" in c.get("/openapi.json", headers=key).json()["paths"]


# -- D10: no server paths in answers ---------------------------------------------------------------------
def test_d10_responses_name_no_server_path(client: TestClient, tmp_path: Path) -> None:
    secret = str(client.index_dir.resolve().parent)
    texts = []
    up = _upload(client, "ok.pdf", text_pdf(tmp_path / "ok.pdf", ["No paths here."]).read_bytes())
    texts.append(up.text)
    job = wait_job(client, up.json()["job"]["job_id"])
    texts.append(client.get(f"/api/jobs/{job['job_id']}").text)
    texts.append(client.get(f"/api/indexes/r/documents/{job['files'][0]['doc_id']}").text)
    texts.append(client.get("/api/indexes/r/documents").text)
    texts.append(client.get("/api/indexes/r/documents/0123456789abcdef").text)
    texts.append(client.post("/api/indexes/r/ask", json={"question": "q", "docs": ["nosuch.pdf"]}).text)
    texts.append(client.post("/api/indexes/r/trace", json={"question": "wind", "papers": ["nope"]}).text)
    texts.append(_upload(client, "bad.pdf", (b"%PDF-1.7\n" + bytes(range(256)) * 80)).text)
    texts.append(_upload(client, "c.pdf", corrupt_pdf(tmp_path / "c.pdf").read_bytes()).text)
    leaks = [t for t in texts if secret in t or "/.partial/" in t]
    assert not leaks, leaks


# -- D11: a shutdown that cuts a request answers in JSON ------------------------------------------------
def test_d11_requests_cut_by_shutdown_get_a_json_503(built: Path, tmp_path: Path) -> None:
    import asyncio

    import uvicorn

    app = create_app(Settings(indexes={"r": str(copy_index(built, tmp_path / "idx"))}, drain_s=1))
    app.state.gate = gate = Gate(slots=1, queue=4)
    gate._sem = asyncio.Semaphore(0)  # every model slot busy: the ask waits in the queue
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical",
                                           timeout_graceful_shutdown=1))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{port}"
    wait_ready(url)
    got: dict = {}

    def ask() -> None:
        r = httpx.post(f"{url}/api/indexes/r/ask", json={"question": "solar"}, timeout=60)
        got.update(status=r.status_code, body=r.json(), retry=r.headers.get("retry-after"))

    asker = threading.Thread(target=ask)
    asker.start()
    time.sleep(1.0)
    server.should_exit = True  # what SIGTERM does
    asker.join(60)
    t.join(60)
    assert got["status"] == 503 and "shutting down" in got["body"]["error"] and got["retry"], got


# -- probe notes: a refused start creates nothing; a reachable server needs a real key --------------------
@pytest.mark.parametrize("key,words", [("", "needs an API key"), ("x", "at least 16")])
def test_refused_start_creates_no_index_and_short_keys_are_refused(tmp_path: Path, key: str, words: str) -> None:
    import os
    import subprocess
    import sys

    from serve_helpers import ROOT

    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'kernels'}", "TRIDENT_API_KEY": key}
    proc = subprocess.run([sys.executable, "-m", "trident_local.cli", "serve", "--index", str(tmp_path / "new"),
                           "--host", "0.0.0.0", "--port", str(free_port())],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and words in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert not (tmp_path / "new").exists()
