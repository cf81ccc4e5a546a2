"""An interrupted `trident index` (SIGKILL) leaves a valid index, and re-running resumes to the
same result as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pdf_factory import corrupt_pdf, rich_pdf, text_pdf

from trident_local.errors import TridentError
from trident_local.index import Index

pytestmark = pytest.mark.integration

TRIDENT = [sys.executable, "-m", "trident_local.cli"]


def _corpus(d: Path) -> Path:
    d.mkdir()
    for i, topic in enumerate(["solar", "wind", "hydro", "tidal", "geothermal", "nuclear"]):
        rich_pdf(d / f"{i}_{topic}.pdf", topic=topic, pages=4)
    text_pdf(d / "notes.pdf", ["A short note about turbines.", "Another page on batteries."])
    return d


def _manifest(idx: Path) -> dict:
    try:
        return json.loads((idx / "manifest.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _run(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*TRIDENT, *args], capture_output=True, text=True, timeout=600, **kw)


def test_kill_and_resume_matches_uninterrupted(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "pdfs")
    killed, clean = tmp_path / "killed", tmp_path / "clean"

    proc = subprocess.Popen([*TRIDENT, "index", str(corpus), "--index", str(killed), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        docs = _manifest(killed).get("documents", {})
        if any(d["stages"].get("ingest") for d in docs.values()):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "indexing finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    # the interrupted index opens and is consistent: every listed document has its data file
    m = _manifest(killed)
    assert 1 <= len(m["documents"]) < 7
    for doc_id in m["documents"]:
        assert (killed / "docs" / doc_id / "document.json").exists()

    resumed = _run(["index", str(corpus), "--index", str(killed), "--workers", "1"])
    assert resumed.returncode == 0, resumed.stderr
    fresh = _run(["index", str(corpus), "--index", str(clean), "--workers", "1"])
    assert fresh.returncode == 0, fresh.stderr

    a, b = Index.open(killed), Index.open(clean)
    assert sorted(a.store.doc_ids(["ingest", "dense"])) == sorted(b.store.doc_ids(["ingest", "dense"]))
    assert len(a.store.doc_ids()) == 7
    for doc_id in b.store.doc_ids():
        da, db = a.store.document(doc_id).to_dict(), b.store.document(doc_id).to_dict()
        assert da == db
        va = np.load(killed / "docs" / doc_id / "dense.npy")
        vb = np.load(clean / "docs" / doc_id / "dense.npy")
        np.testing.assert_allclose(va.astype(np.float32), vb.astype(np.float32), atol=2e-3)
    for pool in ("bm25", "dense", "rrf"):
        ha = [(h.doc_id, h.page) for h in a.search("capacity by region in the wind report", pool=pool, k=10)]
        hb = [(h.doc_id, h.page) for h in b.search("capacity by region in the wind report", pool=pool, k=10)]
        assert ha == hb

    # a third run skips everything
    again = _run(["index", str(corpus), "--index", str(killed), "--json", "-"])
    assert again.returncode == 0
    assert {f["status"] for f in json.loads(again.stdout)["files"]} == {"skipped"}


def test_bad_files_are_reported_and_the_batch_goes_on(tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    d.mkdir()
    text_pdf(d / "good.pdf", ["good page one", "good page two"])
    corrupt_pdf(d / "broken.pdf")
    (d / "readme.txt").write_text("not indexed: folders only yield *.pdf")
    res = _run(["index", str(d), str(tmp_path / "nope.pdf"), "--index", str(tmp_path / "idx"), "--json", "-"])
    assert res.returncode == 1
    report = json.loads(res.stdout)
    by_name = {Path(f["path"]).name: f for f in report["files"]}
    assert by_name["good.pdf"]["status"] == "indexed" and by_name["good.pdf"]["pages"] == 2
    assert by_name["broken.pdf"]["status"] == "failed" and "corrupt PDF" in by_name["broken.pdf"]["error"]
    assert by_name["nope.pdf"]["status"] == "failed" and "no such file" in by_name["nope.pdf"]["error"]
    assert "readme.txt" not in by_name
    assert len(Index.open(tmp_path / "idx").store.doc_ids()) == 1


def test_index_of_only_scanned_pages_without_ocr(tmp_path: Path) -> None:
    from pdf_factory import scanned_pdf

    from trident_local.config import Config

    idx = Index.create(tmp_path / "idx", Config(ocr="none"))
    rep = idx.add([scanned_pdf(tmp_path / "scan.pdf")], workers=1)
    assert not rep.failed
    assert idx.search("invoice total", pool="bm25", k=5)[0].page == 1  # listed, with score 0
    assert idx.store.manifest.documents[idx.resolve("scan")].warnings


def test_page_image_of_a_document_not_registered_yet(tmp_path: Path) -> None:
    """A Ray actor annotating with a VLM renders pages before the driver registers the document: the
    image comes from the document's own path, at the same place and size as for a registered one."""
    from trident_local.docs.workers import parse_pdf

    pdf = rich_pdf(tmp_path / "solar.pdf", topic="solar")
    idx = Index.create(tmp_path / "ix")
    doc = parse_pdf(str(pdf), "d0c", idx.config.ocr)
    early = idx.store.document_page_image(doc, 2)
    assert early.exists() and early.parent == idx.store.doc_dir("d0c") / "pages"
    idx.store.write_document(doc)
    assert idx.store.page_image("d0c", 2) == early
    with pytest.raises(TridentError, match=f"pages 1..{doc.n_pages}"):
        idx.store.document_page_image(doc, doc.n_pages + 1)
