"""Regression tests for the second service probe's defects: key store, validator, errors seen, restart,
uploads, page images, private files. Each one failed before its fix."""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
from pathlib import Path

import pymupdf
import pytest
from fastapi.testclient import TestClient
from pdf_factory import text_pdf
from serve_helpers import build_index, copy_index, hold_first_index_until_cancelled, wait_job

from trident_local.errors import IngestError
from trident_local.serve import Settings, create_app
from trident_local.serve.auth import KeyStore

pytestmark = pytest.mark.integration

LOCAL = "http://127.0.0.1"
ADMIN = {"Authorization": "Bearer admin-secret-0123456789"}
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("probe2")
    return build_index(d / "idx", d / "pdfs")


def _app(idx: Path, **settings):
    return create_app(Settings(indexes={"r": str(idx)}, **settings))


@pytest.fixture
def client(built: Path, tmp_path: Path):
    idx = copy_index(built, tmp_path / "idx")
    with TestClient(_app(idx), base_url=LOCAL) as c:
        c.index_dir = idx
        yield c


def _upload(c: TestClient, name: str, data: bytes, **kw):
    return c.post("/api/indexes/r/documents", files={"file": (name, data, "application/pdf")}, **kw)


# -- keys and the one validator ------------------------------------------------------------------------
def test_surrogate_in_a_key_is_a_400_and_the_key_store_keeps_working(built: Path, tmp_path: Path) -> None:
    idx = copy_index(built, tmp_path / "idx")
    with TestClient(_app(idx, api_key=ADMIN["Authorization"][7:]), base_url=LOCAL) as c:
        for body in (b'{"scope": "read", "indexes": ["\\ud800"]}', b'{"scope": "read", "label": "\\udfff"}'):
            r = c.post("/api/keys", content=body, headers={**ADMIN, **JSON})
            assert r.status_code == 400 and "surrogate" in r.json()["error"], r.text
        assert c.get("/api/keys", headers=ADMIN).status_code == 200
        made = c.post("/api/keys", json={"scope": "read"}, headers=ADMIN).json()
        reader = {"Authorization": f"Bearer {made['key']}"}
        assert c.delete(f"/api/keys/{made['key_id']}", headers=ADMIN).status_code == 200
        assert c.get("/api/indexes", headers=reader).status_code == 401
    with TestClient(_app(idx, api_key=ADMIN["Authorization"][7:]), base_url=LOCAL) as c:  # a restart
        assert c.get("/api/indexes", headers=reader).status_code == 401  # revoked stays revoked


def test_a_failed_key_write_changes_nothing_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trident_local.serve import auth

    store = KeyStore(tmp_path / "keys.json")
    secret, k = store.create("read")
    real = auth.atomic_write_json

    def full(*a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(auth, "atomic_write_json", full)
    with pytest.raises(OSError):
        store.delete(k.key_id)
    assert store.check(secret) is not None  # memory agrees with the file: the key was not revoked
    with pytest.raises(OSError):
        store.create("admin")
    assert [x.key_id for x in store.list()] == [k.key_id]
    monkeypatch.setattr(auth, "atomic_write_json", real)
    assert store.delete(k.key_id)
    assert KeyStore(tmp_path / "keys.json").check(secret) is None  # revoked on disk, after a restart too


def test_a_full_disk_on_a_key_write_is_a_507(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trident_local.serve import auth

    idx = copy_index(built, tmp_path / "idx")
    with TestClient(_app(idx, api_key=ADMIN["Authorization"][7:]), base_url=LOCAL) as c:
        made = c.post("/api/keys", json={"scope": "read"}, headers=ADMIN).json()

        def full(*a, **kw):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(auth, "atomic_write_json", full)
        r = c.delete(f"/api/keys/{made['key_id']}", headers=ADMIN)
        assert r.status_code == 507 and r.headers["retry-after"] and "full" in r.json()["error"], r.text
        assert c.get("/api/indexes", headers={"Authorization": f"Bearer {made['key']}"}).status_code == 200


@pytest.mark.parametrize("route,body", [
    ("trace", b'{"question": "which region led?", "format": "multiple_choice", "choices": ["\\ud800 A", "B"]}'),
    ("ask", b'{"question": "solar", "pool": "fused", "ignored_extra": {"\\ud800": 1}}'),
    ("search", b'{"question": "solar", "docs": ["solar.pdf", "\\udc00"]}'),
    ("verify", b'{"answer": {"claims": [{"text": "x \\ud800", "page": 1}]}, "doc": "solar.pdf"}'),
])
def test_every_string_field_is_checked(client: TestClient, route: str, body: bytes) -> None:
    r = client.post(f"/api/indexes/r/{route}", content=body, headers=JSON)
    assert r.status_code == 400 and "surrogate" in r.json()["error"], r.text


def test_surrogate_in_an_index_config_creates_nothing(built: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with TestClient(create_app(Settings(data_dir=str(data))), base_url=LOCAL) as c:
        r = c.post("/api/indexes", content=b'{"name": "sur1", "config": {"chat": "\\ud800"}}', headers=JSON)
        assert r.status_code == 400 and "surrogate" in r.json()["error"], r.text
        assert not (data / "sur1").exists()


def test_deeply_nested_verify_answer_is_a_400(client: TestClient) -> None:
    deep = b'{"answer": {"claims": ' + b"[" * 600 + b"]" * 600 + b'}, "doc": "solar.pdf"}'
    r = client.post("/api/indexes/r/verify", content=deep, headers=JSON)
    assert r.status_code == 400 and "nested deeper" in r.json()["error"], r.text


# -- errors that are seen ---------------------------------------------------------------------------------
def test_a_500_is_counted_logged_and_has_security_headers(client: TestClient, monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    def broken(*a, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(client.app.state.engine, "search", broken)
    with caplog.at_level(logging.INFO, logger="trident_local.serve"):
        r = client.post("/api/indexes/r/search", json={"question": "solar"})
    assert r.status_code == 500 and "RuntimeError" in r.json()["error"], r.text
    assert "default-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
    lines = [rec for rec in caplog.records if rec.getMessage() == "request"]
    assert any(rec.fields["status"] == 500 for rec in lines), [rec.fields for rec in lines]
    metrics = client.get("/metrics").text
    assert 'route="/api/indexes/{index}/search",status="500"} 1.0' in metrics


# -- restart ------------------------------------------------------------------------------------------------
def test_indexes_made_through_the_api_are_served_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = {"data_dir": str(data), "api_key": ADMIN["Authorization"][7:]}
    with TestClient(create_app(Settings(**settings)), base_url=LOCAL) as c:
        assert c.post("/api/indexes", json={"name": "made"}, headers=ADMIN).status_code == 201
        key = c.post("/api/keys", json={"scope": "read", "indexes": ["made"]}, headers=ADMIN).json()["key"]
    partial = data / "made" / "uploads" / ".partial"
    partial.mkdir(parents=True, exist_ok=True)
    (partial / "x.part").write_bytes(b"%PDF- cut by a kill")
    with TestClient(create_app(Settings(**settings)), base_url=LOCAL) as c:
        scoped = {"Authorization": f"Bearer {key}"}
        assert c.get("/api/indexes/made", headers=scoped).status_code == 200
        assert [m["id"] for m in c.get("/v1/models", headers=scoped).json()["data"]] == ["trident/made"]
        assert c.post("/api/indexes", json={"name": "made"}, headers=ADMIN).status_code == 409
        assert not any(partial.iterdir())  # its partial-file clean-up ran


# -- uploads ------------------------------------------------------------------------------------------------
def test_a_job_asked_to_cancel_does_not_claim_its_file(tmp_path: Path) -> None:
    from trident_local.serve.jobs import JobFile, JobManager

    running, release = threading.Event(), threading.Event()

    def runner(job, f):
        running.set()
        release.wait(30)
        f.status = "cancelled"

    m = JobManager({"r": tmp_path}, {"index": runner})
    m.start()
    job = m.submit("r", "index", [JobFile("a.pdf", doc_id="0123456789abcdef")])
    assert running.wait(30)
    assert m.active_doc_ids("r") == {"0123456789abcdef"}
    m.cancel(job.job_id)
    assert m.active_doc_ids("r") == set()  # a re-upload now is stored, not answered "duplicate"
    release.set()
    m.stop()


def test_reupload_during_a_cancel_is_stored_and_indexed(client: TestClient, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    hold_first_index_until_cancelled(monkeypatch)
    data = text_pdf(tmp_path / "long.pdf", [f"Long page {i}. Serial {70000 + i}." for i in range(150)]).read_bytes()
    first = _upload(client, "long.pdf", data).json()
    client.post(f"/api/jobs/{first['job']['job_id']}/cancel")
    again = _upload(client, "long.pdf", data)
    assert again.status_code == 202 and again.json()["files"][0]["status"] == "stored", again.text
    wait_job(client, first["job"]["job_id"])
    job = wait_job(client, again.json()["job"]["job_id"])
    assert job["state"] == "done", job
    doc_id = again.json()["files"][0]["doc_id"]
    assert client.get(f"/api/indexes/r/documents/{doc_id}").status_code == 200
    assert (client.index_dir / "uploads" / doc_id).is_dir()


def _incremental_cut(tmp_path: Path) -> tuple[bytes, bytes]:
    base = tmp_path / "incr.pdf"
    text_pdf(base, ["Revision one, page one."])
    doc = pymupdf.open(base)
    for i in range(2):
        doc.new_page().insert_text((72, 72), f"Revision two adds page {i + 2}. " * 20)
    doc.saveIncr()
    doc.close()
    whole = base.read_bytes()
    first_eof = whole.find(b"%%EOF") + 5
    return whole, whole[: first_eof + (len(whole) - first_eof) // 2]


def test_a_cut_last_revision_is_refused(client: TestClient, tmp_path: Path) -> None:
    from trident_local.docs.pdf_open import open_pdf

    whole, cut = _incremental_cut(tmp_path)
    (tmp_path / "whole.pdf").write_bytes(whole + b"\n\0\0 padding\n")  # junk after %%EOF is not a cut
    with open_pdf(tmp_path / "whole.pdf") as pdf:
        assert pdf.page_count == 3
    (tmp_path / "cut.pdf").write_bytes(cut)
    with pytest.raises(IngestError, match="truncated"):
        open_pdf(tmp_path / "cut.pdf")
    r = _upload(client, "cut.pdf", cut)
    assert r.status_code == 422 and "truncated" in r.json()["error"], r.text


def test_every_file_is_0600_and_every_folder_0700(client: TestClient, tmp_path: Path) -> None:
    r = _upload(client, "p.pdf", text_pdf(tmp_path / "p.pdf", ["Private text for the pools."]).read_bytes())
    assert wait_job(client, r.json()["job"]["job_id"])["state"] == "done"
    doc = r.json()["files"][0]["doc_id"]
    assert client.get(f"/api/indexes/r/documents/{doc}/pages/1.png").status_code == 200
    loose = [str(p) for p in [client.index_dir, *client.index_dir.rglob("*")]
             if stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert not loose, loose
    assert any("bm25" in str(p) for p in client.index_dir.rglob("*.npy"))


# -- page images ------------------------------------------------------------------------------------------
def test_page_images_stay_within_the_quota(built: Path, tmp_path: Path) -> None:
    idx = copy_index(built, tmp_path / "idx")
    with TestClient(_app(idx, page_cache_mb=0.15), base_url=LOCAL) as c:
        docs = c.get("/api/indexes/r/documents").json()["documents"]
        sizes = []
        for d in docs:
            for page in range(1, d["n_pages"] + 1):
                for scale in (1, 2, 3):
                    r = c.get(f"/api/indexes/r/documents/{d['doc_id']}/pages/{page}.png?scale={scale}")
                    assert r.status_code == 200 and r.content[:4] == b"\x89PNG"
                    sizes.append(len(r.content))
        kept = sum(p.stat().st_size for p in idx.glob("docs/*/pages/*.png"))
        assert sum(sizes) > 0.15 * 1024**2 >= kept - max(sizes), (sum(sizes), kept)


def test_a_capped_scale_is_kept_once(client: TestClient, tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page(width=9000, height=9000).insert_text((100, 200), "A poster page.", fontsize=120)
    doc.save(tmp_path / "poster.pdf")
    r = _upload(client, "poster.pdf", (tmp_path / "poster.pdf").read_bytes())
    doc_id = wait_job(client, r.json()["job"]["job_id"])["files"][0]["doc_id"]
    for scale in (1, 2, 3):
        assert client.get(f"/api/indexes/r/documents/{doc_id}/pages/1.png?scale={scale}").status_code == 200
    assert len(list((client.index_dir / "docs" / doc_id / "pages").glob("*.png"))) == 1


def test_a_render_racing_a_delete_leaves_nothing(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from trident_local.index import Index

    doc_id = next(d["doc_id"] for d in client.get("/api/indexes/r/documents").json()["documents"])
    real = Index.remove

    def remove_then_render(self, d, *a, **kw):
        out = real(self, d, *a, **kw)
        late = self.store.doc_dir(d) / "pages" / "p0001@144.png"  # what a reader on the old snapshot drew
        late.parent.mkdir(parents=True, exist_ok=True)
        late.write_bytes(b"\x89PNG late")
        return out

    monkeypatch.setattr(Index, "remove", remove_then_render)
    assert client.delete(f"/api/indexes/r/documents/{doc_id}").status_code == 200
    assert not (client.index_dir / "docs" / doc_id).exists()


# -- the event loop stays free ------------------------------------------------------------------------------
def test_asks_and_searches_run_in_worker_processes_and_see_every_write(client: TestClient, built: Path,
                                                                       tmp_path: Path) -> None:
    idx = copy_index(built, tmp_path / "idx2")
    with TestClient(_app(idx, ask_workers=1), base_url=LOCAL) as c:
        workers = c.app.state.workers
        assert workers.takes(c.app.state.engine.handle("r"))
        for q in ("Which region led with 2,900 megawatts?", "wind capacity by region"):
            r = c.post("/api/indexes/r/ask", json={"question": q})
            assert r.status_code == 200 and r.json()["answer"]["citations"], r.text
        from trident_local.serve import workers as worker_module

        assert workers._pool.submit(worker_module._ready).result() != os.getpid()  # another process
        assert c.post("/api/indexes/r/ask", json={"question": "q", "docs": ["nope.pdf"]}).status_code == 404
        pdf = text_pdf(tmp_path / "pump.pdf", ["Pump manual. The impeller is replaced every 9 months."])
        up = _upload(c, "pump.pdf", pdf.read_bytes())
        assert wait_job(c, up.json()["job"]["job_id"])["state"] == "done"
        hits = c.post("/api/indexes/r/search", json={"question": "impeller replaced", "k": 1}).json()["hits"]
        assert hits and hits[0]["doc_id"] == up.json()["files"][0]["doc_id"]  # the worker re-opened the index


def test_health_answers_head_and_get(client: TestClient) -> None:
    assert client.head("/health").status_code == 200
    assert client.get("/health").json() == {"status": "ok"}


# -- notes: names, ETA -------------------------------------------------------------------------------------
def test_names_match_in_nfc_and_an_ambiguous_name_is_a_409(client: TestClient, tmp_path: Path) -> None:
    import unicodedata

    nfc = "résumé.pdf"
    r = _upload(client, nfc, text_pdf(tmp_path / "r.pdf", ["Curriculum text."]).read_bytes())
    doc_id = wait_job(client, r.json()["job"]["job_id"])["files"][0]["doc_id"]
    nfd = unicodedata.normalize("NFD", nfc)
    assert client.get(f"/api/indexes/r/documents/{nfd}").json()["doc_id"] == doc_id
    twin = _upload(client, nfc, text_pdf(tmp_path / "t.pdf", ["Other bytes, same name."]).read_bytes())
    wait_job(client, twin.json()["job"]["job_id"])
    amb = client.get(f"/api/indexes/r/documents/{nfc}")
    assert amb.status_code == 409 and "several documents" in amb.json()["error"], amb.text


def test_rate_and_eta_inside_a_long_first_file() -> None:
    import time

    from trident_local.serve.jobs import Job, JobFile

    job = Job("j", "r", "index", [JobFile("long.pdf", pages=300, pages_read=30)], state="running",
              run_started=time.time() - 10)
    p = job.progress()
    assert p["pages_per_s"] > 0 and p["eta_s"] is not None and p["pages_done"] == 30
