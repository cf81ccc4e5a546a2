"""The service API through httpx's TestClient: queries, uploads and jobs, bad input, keys, the model queue."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pdf_factory import corrupt_pdf, encrypted_pdf, scanned_pdf, text_pdf
from serve_helpers import build_index, copy_index, wait_job

from trident_local.errors import TridentError
from trident_local.generate.records import ABSTAINED
from trident_local.serve import Settings, create_app
from trident_local.serve.gate import Gate, QueueFull

LOCAL = "http://127.0.0.1"  # TestClient's default host name, testserver, is not one the server answers to


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("serve")
    return build_index(d / "idx", d / "pdfs")


@pytest.fixture
def client(built: Path, tmp_path: Path):
    idx = copy_index(built, tmp_path / "idx")
    with TestClient(create_app(Settings(indexes={"r": str(idx)}, max_upload_mb=3)), base_url=LOCAL) as c:
        c.index_dir = idx
        yield c


def _doc_id(client: TestClient, name: str) -> str:
    return next(d["doc_id"] for d in client.get("/api/indexes/r/documents").json()["documents"]
                if d["file_name"] == name)


def test_ask_returns_cli_json_with_evidence_boxes_and_who_produced_it(client: TestClient) -> None:
    r = client.post("/api/indexes/r/ask", json={"question": "Which region led with 2,900 megawatts?"})
    assert r.status_code == 200, r.text
    d = r.json()
    assert set(d) >= {"answer", "pool", "rerank", "pool_pages", "timings", "evidence", "produced_by"}
    a = d["answer"]
    assert a["citations"] and a["mode"] == "evidence-first (no model)"
    assert "South" in a["text"] or "South" in a["support"]
    assert d["produced_by"]["answer"] == "evidence-first (no model)" and d["produced_by"]["rerank"] == "none"
    assert d["rerank"]["note"]  # the default (auto) says why it kept the pool order
    assert len(d["evidence"]) == len(a["citations"])
    first = d["evidence"][0]
    assert first["page"] == a["citations"][0]["page"] and first["width"] > 0
    if a["support_page"] == first["page"]:  # the supporting sentence is boxed on its page
        assert any(b["bbox"][2] > b["bbox"][0] for b in first["boxes"])
    png = client.get(f"/api/indexes/r/documents/{first['doc_id']}/pages/{first['page']}.png")
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    sharp = client.get(f"/api/indexes/r/documents/{first['doc_id']}/pages/{first['page']}.png?scale=2")
    from PIL import Image

    sizes = [Image.open(io.BytesIO(r.content)).size for r in (png, sharp)]
    assert sizes[1][0] == pytest.approx(2 * sizes[0][0], abs=2)  # twice the DPI for a high-DPI screen
    strict = client.post("/api/indexes/r/ask", json={"question": "Which region led with 2,900 megawatts?",
                                                     "min_confidence": 1.0}).json()["answer"]
    assert strict["text"] == ABSTAINED and strict["candidate"] == a["candidate"]
    assert "threshold 1.00" in strict["gate"]


def test_search_verify_and_document_info(client: TestClient) -> None:
    doc = _doc_id(client, "wind.pdf")
    hits = client.post("/api/indexes/r/search", json={"question": "wind capacity by region", "docs": [doc]}).json()
    assert hits["hits"] and all(h["doc_id"] == doc for h in hits["hits"])
    assert all(len(r["bbox"]) == 4 and r["page"] == h["page"] for h in hits["hits"] for r in h["regions"])
    v = client.post("/api/indexes/r/verify",
                    json={"answer": "The South region led with 2,900 megawatts [p. 1].", "doc": doc})
    assert v.status_code == 200, v.text
    res = v.json()["results"][0]
    assert res["cited_page"] == 1 and res["action"] in ("fix-page", "remove", "flag")
    if res["action"] == "fix-page":
        assert res["new_page"] == 2
    info = client.get(f"/api/indexes/r/documents/{doc}").json()
    assert info["n_pages"] == 3 and len(info["pages"]) == 3
    assert client.get("/api/indexes/r").json()["pools"]["bm25"]["fresh"] is True
    job = client.post("/api/indexes/r/annotate", json={"docs": ["wind.pdf"]})  # a background annotation job
    assert job.status_code == 202 and [f["doc_id"] for f in job.json()["files"]] == [doc]
    assert wait_job(client, job.json()["job_id"])["state"] == "done"
    assert client.post("/api/indexes/r/annotate", json={"docs": ["nope.pdf"]}).status_code == 404


def test_service_search_and_ask_rank_the_pipelines_pages(client: TestClient) -> None:
    from trident_local import search
    from trident_local.index import Index

    idx = Index.open(client.index_dir)
    q = "wind capacity by region"
    hits = client.post("/api/indexes/r/search", json={"question": q, "k": 3}).json()["hits"]
    assert [(h["doc_id"], h["page"], h["found_by"]) for h in hits] == \
        [(p.doc_id, p.page, p.found_by) for p in search(idx, q, k=3)]
    off = client.post("/api/indexes/r/search", json={"question": q, "k": 3, "finders": "none"}).json()["hits"]
    assert [(h["doc_id"], h["page"]) for h in off] == [x.key for x in idx.search(q, k=3)]
    bad = client.post("/api/indexes/r/search", json={"question": q, "finders": "bogus"})
    assert bad.status_code == 400 and "unknown lead-page finder" in bad.text
    asked = client.post("/api/indexes/r/ask", json={"question": q, "finders": "none"})
    assert asked.status_code == 200, asked.text
    assert [tuple(p[:2]) for p in asked.json()["pool_pages"]] == \
        [x.key for x in search(idx, q, k=idx.config.pool_size, finders="none", regions=False)]
    assert client.post("/api/indexes/r/ask", json={"question": q, "finders": "bogus"}).status_code == 400


def test_upload_indexes_in_background_then_askable_and_deletable(client: TestClient, tmp_path: Path) -> None:
    pdf = text_pdf(tmp_path / "turbine.pdf", ["Turbine maintenance manual. The gearbox oil is changed every 18 months."])
    r = client.post("/api/indexes/r/documents", files={"file": ("turbine.pdf", pdf.read_bytes(), "application/pdf")})
    assert r.status_code == 202, r.text
    during = client.post("/api/indexes/r/ask", json={"question": "Which region led?"})  # while the job runs
    assert during.status_code == 200 and during.json()["answer"]["citations"]
    job = wait_job(client, r.json()["job"]["job_id"])
    assert job["state"] == "done" and job["progress"]["pages_done"] == 1 == job["progress"]["pages_total"]
    doc_id = job["files"][0]["doc_id"]
    info = client.get(f"/api/indexes/r/documents/{doc_id}").json()
    assert "path" not in info and (client.index_dir / r.json()["files"][0]["stored_as"]).is_file()
    ans = client.post("/api/indexes/r/ask", json={"question": "How often is the gearbox oil changed?",
                                                  "docs": [doc_id]}).json()
    assert "18 months" in ans["answer"]["text"] + ans["answer"]["support"]
    again = client.post("/api/indexes/r/documents", files={"file": ("copy.pdf", pdf.read_bytes(), "application/pdf")})
    assert again.status_code == 200 and again.json()["files"][0]["status"] == "duplicate"
    assert client.delete(f"/api/indexes/r/documents/{doc_id}").json() == {"deleted": doc_id}
    assert client.get(f"/api/indexes/r/documents/{doc_id}").status_code == 404
    assert not (client.index_dir / "uploads" / doc_id).exists()
    events = client.get(f"/api/jobs/{job['job_id']}/events").text  # a finished job: one snapshot, then end
    assert "event: end" in events and json.loads(events.split("data: ")[-1])["state"] == "done"


@pytest.mark.parametrize("name", ["../../etc/passwd.pdf", "a\x00b.pdf", "line\nbreak.pdf", "Jahresbericht_ü_日本.pdf",
                                  "..", "C:\\Windows\\x.pdf"])
def test_upload_names_never_escape_the_index(client: TestClient, tmp_path: Path, name: str) -> None:
    pdf = text_pdf(tmp_path / "n.pdf", [f"Name test {name!r} unique body text."])
    r = client.post("/api/indexes/r/documents", files={"file": (name, pdf.read_bytes(), "application/pdf")})
    assert r.status_code == 202, r.text
    f = r.json()["files"][0]
    assert "path" not in f and f["stored_as"].startswith("uploads/")
    path = (client.index_dir / f["stored_as"]).resolve()
    assert path.is_file() and path.is_relative_to((client.index_dir / "uploads").resolve())
    assert "\x00" not in f["name"] and "\n" not in f["name"] and "/" not in f["name"] and "\\" not in f["name"]
    assert wait_job(client, r.json()["job"]["job_id"])["state"] == "done"


def test_bad_uploads_are_clear_4xx_and_leave_nothing(client: TestClient, tmp_path: Path) -> None:
    cases = {
        "notes.pdf": (b"just text, not a PDF", 415, "not a PDF"),
        "empty.pdf": (b"", 422, "empty"),
        "big.pdf": (b"%PDF-1.7\n" + b"0" * (3 * 1024 * 1024 + 10), 413, "larger than"),
        "truncated.pdf": (corrupt_pdf(tmp_path / "c.pdf").read_bytes(), 422, "corrupt"),
        "locked.pdf": (encrypted_pdf(tmp_path / "e.pdf").read_bytes(), 422, "encrypted"),
    }
    before = client.get("/api/indexes/r/documents").json()
    for name, (data, status, words) in cases.items():
        r = client.post("/api/indexes/r/documents", files={"file": (name, data, "application/pdf")})
        assert r.status_code == status, (name, r.text)
        assert words in r.json()["error"] and r.json()["job"] is None
    assert client.get("/api/indexes/r/documents").json() == before
    assert not any((client.index_dir / "uploads").rglob("*.pdf"))
    assert not any((client.index_dir / "uploads" / ".partial").iterdir())
    assert client.post("/api/indexes/r/documents", content=b"x", headers={"content-type": "text/plain"}).status_code == 415
    assert client.post("/api/indexes/r/documents", files={"other": ("a.txt", b"x")}).status_code == 422


def test_scanned_upload_is_indexed(client: TestClient, tmp_path: Path) -> None:
    pdf = scanned_pdf(tmp_path / "scan.pdf")
    r = client.post("/api/indexes/r/documents", files={"file": ("scan.pdf", pdf.read_bytes(), "application/pdf")})
    assert r.status_code == 202
    job = wait_job(client, r.json()["job"]["job_id"])
    assert job["state"] == "done", job
    info = client.get(f"/api/indexes/r/documents/{job['files'][0]['doc_id']}").json()
    assert info["pages"][0]["ocr"] or info["pages"][0]["image_only"]


def test_bad_requests_are_json_errors(client: TestClient) -> None:
    def err(r, status):
        assert r.status_code == status, r.text
        assert isinstance(r.json()["error"], str) and r.json()["status"] == status

    err(client.get("/api/indexes/nope/documents"), 404)
    err(client.get("/api/indexes/r/documents/0123456789abcdef"), 404)
    err(client.get(f"/api/indexes/r/documents/{_doc_id(client, 'solar.pdf')}/pages/99.png"), 404)
    err(client.get(f"/api/indexes/r/documents/{_doc_id(client, 'solar.pdf')}/pages/1.png?scale=9"), 422)
    err(client.get("/api/jobs/nojob"), 404)
    err(client.post("/api/jobs/nojob/cancel"), 404)
    err(client.post("/api/indexes/r/ask", content=b'{"question": ', headers={"content-type": "application/json"}), 400)
    err(client.post("/api/indexes/r/ask", json={"question": "x" * 100_000}), 413)
    err(client.post("/api/indexes/r/ask", json={"question": "   "}), 400)
    err(client.post("/api/indexes/r/ask", json={"nothing": 1}), 422)
    err(client.post("/api/indexes/r/ask", json={"question": "q", "min_confidence": 1.5}), 422)
    err(client.post("/api/indexes/r/ask", json={"question": "q", "docs": ["nosuchdoc"]}), 404)
    err(client.post("/api/indexes/r/verify", json={"answer": "", "doc": "solar.pdf"}), 400)
    err(client.post("/api/indexes/r/ask", content=b"[" + b"1," * 200_000 + b"1]",
                    headers={"content-type": "application/json"}), 413)
    err(client.post("/api/indexes", json={"name": "new"}), 400)  # no data_dir: creating is off
    chunked = (b'{"question": "' + b"x" * 1000 + b'"}' for _ in range(400))  # no Content-Length
    err(client.post("/api/indexes/r/ask", content=chunked, headers={"content-type": "application/json"}), 413)
    err(client.post("/api/indexes/r/ask", files={"file": ("a.pdf", b"%PDF-" + b"0" * 300_000)}), 413)


def test_keys_scopes_and_hashed_storage(built: Path, tmp_path: Path) -> None:
    idx = copy_index(built, tmp_path / "idx")
    app = create_app(Settings(indexes={"r": str(idx)}, api_key="admin-secret"))
    with TestClient(app, base_url=LOCAL) as c:
        assert c.get("/health").status_code == 200 and c.get("/").status_code == 200  # open: health + page shell
        assert c.get("/api/indexes").status_code == 401
        assert c.get("/api/indexes", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/metrics").status_code == 401
        admin = {"Authorization": "Bearer admin-secret"}
        reader = c.post("/api/keys", json={"scope": "read", "indexes": ["r"]}, headers=admin).json()["key"]
        other = c.post("/api/keys", json={"scope": "write", "indexes": ["other"]}, headers=admin).json()["key"]
        rh, oh = {"Authorization": f"Bearer {reader}"}, {"Authorization": f"Bearer {other}"}
        assert c.post("/api/indexes/r/search", json={"question": "solar"}, headers=rh).status_code == 200
        assert c.post("/api/indexes/r/documents", files={"file": ("a.pdf", b"%PDF-")}, headers=rh).status_code == 403
        assert c.get("/api/keys", headers=rh).status_code == 403
        assert c.post("/api/indexes/r/search", json={"question": "solar"}, headers=oh).status_code == 403
        stored = (idx / "serve_keys.json").read_text()
        assert reader not in stored and "admin-secret" not in stored and len(json.loads(stored)["keys"]) == 2
    with TestClient(create_app(Settings(indexes={"r": str(idx)})), base_url=LOCAL) as c:  # keys persist
        assert c.get("/api/indexes").status_code == 401
        assert c.get("/api/indexes", headers={"Authorization": f"Bearer {reader}"}).status_code == 200


def test_non_loopback_bind_needs_a_key(built: Path) -> None:
    with pytest.raises(TridentError, match="needs an API key"):
        create_app(Settings(indexes={"r": str(built)}, host="0.0.0.0", keys_file="/nonexistent/keys.json"))


def test_full_model_queue_answers_429_with_retry_after(client: TestClient) -> None:
    client.app.state.gate = gate = Gate(slots=1, queue=0, retry_after=7)
    gate.admitted = 1  # one ask holds the only slot
    r = client.post("/api/indexes/r/ask", json={"question": "solar"})
    assert r.status_code == 429 and r.headers["retry-after"] == "7" and "queue is full" in r.json()["error"]
    assert "trident_queue_rejections_total 1.0" in client.get("/metrics").text


def test_gate_admits_slots_plus_queue() -> None:
    async def main() -> list[str]:
        gate, out = Gate(slots=1, queue=1), []
        release = asyncio.Event()

        async def hold(tag: str) -> None:
            try:
                async with gate.slot():
                    out.append(tag)
                    await release.wait()
            except QueueFull:
                out.append(f"{tag}:429")

        tasks = [asyncio.create_task(hold(t)) for t in "abc"]
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.gather(*tasks)
        return out

    assert asyncio.run(main()) == ["a", "c:429", "b"]


def test_jobs_cancel_and_resume_from_the_persisted_table(tmp_path: Path) -> None:
    import threading

    from trident_local.serve.jobs import JobFile, JobManager

    started, release = threading.Event(), threading.Event()

    def runner(job, f):
        started.set()
        release.wait(30)
        f.status, f.pages = "done", 2

    m = JobManager({"r": tmp_path}, {"index": runner})
    m.start()
    a = m.submit("r", "index", [JobFile(f"a{i}.pdf", pages=2) for i in range(3)])
    b = m.submit("r", "index", [JobFile("b.pdf", pages=2)])
    assert started.wait(30)
    assert m.cancel(b.job_id).state == "cancelled"  # queued: cancelled at once
    assert m.cancel(a.job_id).cancel_requested  # running: stops after the current file
    release.set()
    m.stop()
    assert a.state == "cancelled" and [f.status for f in a.files] == ["done", "cancelled", "cancelled"]
    assert a.progress()["pages_done"] == 2

    c = m.submit("r", "index", [JobFile("c.pdf", pages=1)])  # the worker is stopped: stays queued
    again = JobManager({"r": tmp_path}, {"index": runner})  # as after a restart
    assert again.get(c.job_id).state == "queued" and again.get(c.job_id).resumed == 1
    assert again.get(a.job_id).state == "cancelled"
    again.start()
    deadline = time.monotonic() + 30
    while again.get(c.job_id).state != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    again.stop()
    assert again.get(c.job_id).state == "done"


def test_settings_from_file_env_and_flags(tmp_path: Path) -> None:
    f = tmp_path / "serve.toml"
    f.write_text('port = 9000\nmax_upload_mb = 50\n[indexes]\nr = "/srv/r"\n')
    s = Settings.load(f, env={"TRIDENT_SERVE_PORT": "9001", "TRIDENT_SERVE_CORS_ORIGINS": "https://a,https://b",
                              "TRIDENT_API_KEY": "k"}, host="127.0.0.2")
    assert (s.port, s.max_upload_mb, s.cors_origins, s.api_key, s.indexes, s.host) == (
        9001, 50.0, ["https://a", "https://b"], "k", {"r": "/srv/r"}, "127.0.0.2")
    assert s.loopback and not Settings(host="0.0.0.0").loopback
    with pytest.raises(TridentError, match="TRIDENT_SERVE_PORT"):
        Settings.load(env={"TRIDENT_SERVE_PORT": "eighty"})


def test_create_an_index_then_upload_into_it(built: Path, tmp_path: Path) -> None:
    app = create_app(Settings(indexes={"r": str(copy_index(built, tmp_path / "idx"))}, data_dir=str(tmp_path / "data")))
    with TestClient(app, base_url=LOCAL) as c:
        assert c.post("/api/indexes", json={"name": "../evil"}).status_code == 400
        r = c.post("/api/indexes", json={"name": "contracts", "config": {"pools": ["bm25"]}})
        assert r.status_code == 201 and r.json()["config"]["pools"] == ["bm25"] and r.json()["documents"] == 0
        assert c.post("/api/indexes", json={"name": "contracts"}).status_code == 409
        pdf = text_pdf(tmp_path / "lease.pdf", ["Lease agreement. The monthly rent is 2,450 euros."])
        up = c.post("/api/indexes/contracts/documents", files={"file": ("lease.pdf", pdf.read_bytes())})
        assert wait_job(c, up.json()["job"]["job_id"])["state"] == "done"
        assert (tmp_path / "data" / "contracts" / "jobs.json").exists()
        hits = c.post("/api/indexes/contracts/search", json={"question": "monthly rent", "pool": "bm25"}).json()
        assert hits["hits"][0]["page"] == 1


def test_trace_returns_papers_evidence_and_answer(client: TestClient) -> None:
    r = client.post("/api/indexes/r/trace", json={"question": "What was the wind capacity in the South in 2021?",
                                                  "format": "free_form"})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["papers"] and d["evidence"] and d["evidence"][0]["page"] >= 1
    assert d["mode"] == "extractive"
    bad = client.post("/api/indexes/r/trace", json={"question": "q", "format": "poem"})
    assert bad.status_code == 422 and "format" in bad.json()["error"]


def test_ask_options_are_read_from_the_registries(client: TestClient) -> None:
    from trident_local.rerank.base import _REGISTRY, register_reranker

    q = {"question": "Which region led with 2,900 megawatts?"}
    assert client.post("/api/indexes/r/ask", json={**q, "rerank": "fused"}).status_code == 200
    bad = client.post("/api/indexes/r/ask", json={**q, "rerank": "magic"})
    assert bad.status_code == 400 and "rerankers: none, annotated, fused, auto" in bad.json()["error"]
    register_reranker("pool-again", "trident_local.rerank.pool_order:PoolOrder")  # a plug-in, added at run time
    try:
        r = client.post("/api/indexes/r/ask", json={**q, "rerank": "pool-again"})
        assert r.status_code == 200 and r.json()["rerank"]["mode"] == "none"
    finally:
        _REGISTRY.unregister("pool-again")
