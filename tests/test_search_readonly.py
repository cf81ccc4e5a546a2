"""A search never writes the index: on a fresh index, on one whose pools are stale (a document
completed after the last pool build, as a killed run leaves it), and with two readers at once.
Also: pools built on disk answer exactly like pools built in memory; rrf members from config."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pdf_factory import rich_pdf, text_pdf

from trident_local.config import Config
from trident_local.docs.pdf_open import content_hash
from trident_local.docs.workers import parse_pdf
from trident_local.errors import TridentError
from trident_local.index import Index
from trident_local.store.stages import StageRunner

QUESTION = "capacity by region table"
POOLS = ["bm25", "dense", "rrf", "rrf:bm25+dense", "rrf:dense", "fused", "fused:bm25+dense"]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root`` with its size and mtime (ns)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _ingest_without_pool_build(idx: Index, pdf: Path) -> str:
    """What a run killed after a document's last stage but before the pool build leaves."""
    doc = parse_pdf(str(pdf), content_hash(pdf), idx.config.ocr)
    idx.store.write_document(doc)
    StageRunner(idx.store, idx.stages()).run(doc)
    return doc.doc_id


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("readonly")
    rich_pdf(d / "solar.pdf", topic="solar")
    text_pdf(d / "zoo.pdf", ["The zoo keeps four giraffes.", "Penguin feeding happens at noon."])
    idx = Index.create(d / "fresh")
    assert not idx.add([d / "solar.pdf"], workers=1).failed
    shutil.copytree(d / "fresh", d / "stale")
    stale = Index.open(d / "stale")
    _ingest_without_pool_build(stale, d / "zoo.pdf")
    assert stale.pool("bm25").is_stale() and stale.pool("dense").is_stale()
    assert not idx.add([d / "zoo.pdf"], workers=1).failed
    return d


@pytest.mark.parametrize("which", ["fresh", "stale"])
def test_search_writes_nothing(corpus: Path, which: str) -> None:
    root = corpus / which
    before = snapshot(root)
    idx = Index.open(root)
    for pool in POOLS:
        hits = idx.search(QUESTION, pool=pool, k=5)
        assert hits and {h.doc_id for h in hits} <= set(idx.store.doc_ids())
        idx.search("penguin", pool=pool, doc="zoo.pdf", k=2)
    assert snapshot(root) == before
    assert idx.pool("dense").in_memory == (which == "stale")


def test_stale_pools_answer_like_rebuilt_ones(corpus: Path) -> None:
    """In memory (stale on disk) and on disk (rebuilt by the writer): the same pages, the same scores."""
    stale, fresh = Index.open(corpus / "stale"), Index.open(corpus / "fresh")
    for pool in POOLS:
        a = [(h.doc_id, h.page, h.score) for h in stale.search(QUESTION, pool=pool, k=6)]
        b = [(h.doc_id, h.page, h.score) for h in fresh.search(QUESTION, pool=pool, k=6)]
        assert a == b, pool
    assert not fresh.pool("bm25").in_memory


def test_writer_rebuild_swaps_the_folder_and_removes_the_old_one(corpus: Path, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(corpus / "stale", root)
    idx = Index.open(root)
    old = idx.pool("dense").folder()
    with idx.store.writer_lock():
        assert idx.build_pools() == ["bm25", "dense"]
    new = idx.pool("dense").folder()
    assert new != old and new.name == f"dense@{idx.store.manifest.pools['dense'].fingerprint}"
    assert not old.exists() and sorted(p.name for p in (root / "pools").iterdir()) == sorted(
        f"{n}@{idx.store.manifest.pools[n].fingerprint}" for n in ("bm25", "dense"))
    assert not Index.open(root).pool("dense").is_stale()


def test_two_concurrent_readers_on_a_stale_index(corpus: Path) -> None:
    root = corpus / "stale"
    before = snapshot(root)
    cmd = [sys.executable, "-m", "trident_local.cli", "search", "penguin feeding", "--index", str(root),
           "--pool", "bm25", "--json", "-"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    assert outs[0][0] == outs[1][0] and '"file": "zoo.pdf"' in outs[0][0]
    assert all("out of date" in e for _, e in outs)  # each says how to bring the pool up to date
    assert snapshot(root) == before


def test_a_document_without_its_stages_is_not_searched(tmp_path: Path) -> None:
    """Ingested but not embedded (the state a kill leaves): a clear error, not a faiss assertion."""
    idx = Index.create(tmp_path / "idx")
    pdf = text_pdf(tmp_path / "a.pdf", ["one page about wind"])
    doc = parse_pdf(str(pdf), content_hash(pdf), "none")
    idx.store.write_document(doc)
    before = snapshot(idx.store.root)
    for pool in ("dense", "rrf"):
        with pytest.raises(TridentError, match="not completely indexed.*a.pdf"):
            idx.search("wind", pool=pool)
    assert [e.file_name for e in idx.incomplete()] == ["a.pdf"]
    assert snapshot(idx.store.root) == before


def test_rrf_members_from_config(corpus: Path, tmp_path: Path) -> None:
    root = tmp_path / "bm25only"
    shutil.copytree(corpus / "fresh", root)
    idx = Index.open(root)
    idx.store.manifest.config = Config(rrf_members=["bm25"])
    assert [h.key for h in idx.search(QUESTION, pool="rrf", k=6)] == \
           [h.key for h in idx.search(QUESTION, pool="rrf:bm25", k=6)]
    assert idx.pool("rrf").members == ["bm25"]
    with pytest.raises(TridentError, match="fuses plain pools"):
        idx.search(QUESTION, pool="rrf:rrf+bm25")
    with pytest.raises(TridentError, match="unknown pool"):
        idx.search(QUESTION, pool="rrf:bm25+magic")
    with pytest.raises(TridentError, match="takes no argument"):
        idx.search(QUESTION, pool="bm25:dense")
