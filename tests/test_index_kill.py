"""`kill -9` of `trident index` alone (its workers untouched): the parse workers die with it, the
next `trident index` is not locked out, and meanwhile `trident search` answers from the complete
documents, names the incomplete one and writes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from pdf_factory import rich_pdf

from trident_local.errors import TridentError, WriterBusy
from trident_local.index import Index

pytestmark = pytest.mark.integration

TRIDENT = [sys.executable, "-m", "trident_local.cli"]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _stages(idx: Path) -> dict[str, dict[str, bool]]:
    try:
        docs = json.loads((idx / "manifest.json").read_text()).get("documents", {})
    except (FileNotFoundError, ValueError):
        return {}
    return {d: e["stages"] for d, e in docs.items()}


def _wait_until_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.time() + seconds
    alive = pids
    while alive and time.time() < deadline:
        alive = [p for p in alive if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.1)
    return alive


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> tuple[Path, Path, list[int]]:
    """An index whose `trident index --workers 2` was SIGKILLed with one document complete and one
    ingested but not embedded; returns (corpus, index, pids of the workers it had)."""
    d = tmp_path_factory.mktemp("kill")
    corpus = d / "pdfs"
    corpus.mkdir()
    for i, topic in enumerate(["solar", "wind", "hydro", "tidal"]):
        rich_pdf(corpus / f"{i}_{topic}.pdf", topic=topic, pages=24)  # long enough to be caught between two documents
    idx = d / "idx"
    proc = subprocess.Popen([*TRIDENT, "index", str(corpus), "--index", str(idx), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            workers |= {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            break
        st = _stages(idx).values()
        if any(s.get("dense") for s in st) and any(s.get("ingest") and not s.get("dense") for s in st):
            break
        time.sleep(0.02)
    assert proc.poll() is None, "indexing finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGKILL)  # the parent alone, as `kill -9 PID` does
    proc.wait()
    assert workers, "indexing ran without worker processes"
    return corpus, idx, sorted(workers)


def test_workers_die_with_their_parent(killed) -> None:
    _, _, workers = killed
    assert _wait_until_gone(workers, 60) == []


def test_search_answers_from_complete_documents_and_writes_nothing(killed) -> None:
    _, root, workers = killed
    _wait_until_gone(workers, 60)
    before = snapshot(root)
    res = subprocess.run([*TRIDENT, "search", "capacity by region", "--index", str(root), "--pool", "rrf",
                          "--k", "20", "--json", "-"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    idx = Index.open(root)
    incomplete = {e.doc_id: e.file_name for e in idx.incomplete()}
    complete = set(idx.store.doc_ids()) - set(incomplete)
    assert incomplete and complete
    hits = json.loads(res.stdout)
    assert hits and {h["doc_id"] for h in hits} <= complete
    assert "not completely indexed" in res.stderr and all(name in res.stderr for name in incomplete.values())
    with pytest.raises(TridentError, match="not completely indexed"):
        idx.search("capacity", pool="dense", doc=next(iter(incomplete)))
    assert snapshot(root) == before


def test_next_index_run_is_not_locked_out(killed) -> None:
    corpus, root, workers = killed
    _wait_until_gone(workers, 60)
    res = subprocess.run([*TRIDENT, "index", str(corpus), "--index", str(root), "--json", "-"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    statuses = sorted(f["status"] for f in json.loads(res.stdout)["files"])
    assert "skipped" in statuses and "resumed" in statuses
    idx = Index.open(root)
    assert idx.incomplete() == [] and len(idx.store.doc_ids()) == 4
    assert not any(idx.pool(p).is_stale() for p in ("bm25", "dense"))


def test_a_lock_whose_holder_died_does_not_block(tmp_path: Path) -> None:
    from trident_local.store.index_store import IndexStore

    store = IndexStore.create(tmp_path / "idx")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from trident_local.store.index_store import IndexStore\n"
        f"s = IndexStore.open({str(store.root)!r})\n"
        "with s.writer_lock():\n    print('locked', flush=True); time.sleep(600)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(WriterBusy, match=f"another process \\(pid {holder.pid}\\) is writing"), \
                store.writer_lock():
            pass
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    with store.writer_lock():  # the kernel released the dead holder's lock
        assert (store.root / ".lock").read_text() == str(os.getpid())
