"""`trident eval qa|retrieval --run FILE` is resumable: a run stopped after N questions (an exception,
a torn last line, kill -9) and run again gives the rows and summary of one uninterrupted run,
answering only the questions not yet in FILE; other settings are refused, --fresh starts over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trident_local.cli import app
from trident_local.errors import TridentError
from trident_local.evaluate.qa_run import QARow
from trident_local.evaluate.retrieval_run import RunRow
from trident_local.evaluate.run_file import (
    RunFile,
    index_identity,
    row_from_dict,
    row_to_json,
    settings_path,
)
from trident_local.index import Index

pytestmark = pytest.mark.integration

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
HELIOS, SPARSE = "helios_annual_report_2023.pdf", "sparse_page_retrieval.pdf"
QUESTIONS = [  # MMLongBench-Doc layout: doc, question, answer, pages, sources, format
    (HELIOS, "What was the revenue of the Coastal region in 2023?", "95.2", "[2]", "['Table']", "Float"),
    (HELIOS, "How many megawatts of new solar capacity were connected in 2023?", "412", "[1]", "[]", "Int"),
    (SPARSE, "Which method gives the best MRR?", "RRF", "[2]", "['Table']", "Str"),
    (SPARSE, "Who won the 1998 World Cup?", "Not answerable", "[]", "[]", "None"),
    (HELIOS, "What was the revenue of the Northern region in 2023?", "120.4", "[2]", "['Table']", "Float"),
    (SPARSE, "What does BM25 score?", "terms", "[1]", "['Pure-text']", "Str"),
]
N_QA, N_RETRIEVAL = 6, 5  # retrieval runs the answerable questions only
COMMANDS = {
    "qa": (["eval", "qa", "--pool", "bm25"], N_QA),
    "retrieval": (["eval", "retrieval", "--pool", "bm25", "--rerank", "annotated"], N_RETRIEVAL),
}
runner = CliRunner()


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from trident_local.annotate import annotate_index

    d = tmp_path_factory.mktemp("resume") / "ix"
    idx = Index.create(d)
    idx.add([SAMPLES], workers=1)
    annotate_index(idx)
    return d


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    keys = ("doc_id", "question", "answer", "evidence_pages", "evidence_sources", "answer_format")
    path = tmp_path / "questions.json"
    path.write_text(json.dumps([dict(zip(keys, q, strict=True)) for q in QUESTIONS]))
    return path


def invoke(index_dir: Path, dataset: Path, cmd: str, run: Path, *extra: str, code: int = 0):
    """(the CLI result, its JSON summary without the runtime report, or None when it failed)."""
    out = run.with_suffix(".json")
    out.unlink(missing_ok=True)
    args = [*COMMANDS[cmd][0], "--index", str(index_dir), "--dataset", str(dataset), "--json", str(out)]
    res = runner.invoke(app, [*args, "--run", str(run), *extra])
    assert res.exit_code == code, res.output
    if code:
        return res, None
    summary = json.loads(out.read_text())
    summary.pop("runtime", None)
    return res, summary


def count_calls(monkeypatch: pytest.MonkeyPatch, cmd: str, stop_after: int | None = None) -> list[int]:
    """Count the questions answered from now on (one call each); raise at call ``stop_after`` + 1."""
    if cmd == "qa":
        import trident_local.generate.ask as module

        name = "ask"
    else:
        import trident_local.evaluate.retrieval_run as module

        name = "page_metrics"
    real, calls = getattr(module, name), []

    def counted(*args, **kwargs):
        if stop_after is not None and len(calls) == stop_after:
            raise RuntimeError("interrupted")
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def without_resumed(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "resumed"}


@pytest.mark.parametrize("cmd", ["qa", "retrieval"])
def test_interrupted_run_resumes_to_the_uninterrupted_result(
    index_dir: Path, dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cmd: str
) -> None:
    n = COMMANDS[cmd][1]
    _, whole = invoke(index_dir, dataset, cmd, tmp_path / "whole.jsonl")
    assert whole["n"] == n and whole["resumed"] == 0

    run = tmp_path / "run.jsonl"
    with monkeypatch.context() as m:
        count_calls(m, cmd, stop_after=2)
        res = runner.invoke(
            app,
            [*COMMANDS[cmd][0], "--index", str(index_dir), "--dataset", str(dataset), "--run", str(run)],
        )
    assert isinstance(res.exception, RuntimeError)
    assert len(run.read_text().splitlines()) == 2  # the two finished questions were kept

    with monkeypatch.context() as m:
        calls = count_calls(m, cmd)
        res, resumed = invoke(index_dir, dataset, cmd, run)
    assert len(calls) == n - 2  # only the rest was run
    assert resumed["resumed"] == 2 and without_resumed(resumed) == without_resumed(whole)
    assert run.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()  # rows, order and bytes
    assert f"2 of {n} questions already done" in " ".join(res.stderr.split())

    with monkeypatch.context() as m:  # finished: a re-run reuses every row
        calls = count_calls(m, cmd)
        _, again = invoke(index_dir, dataset, cmd, run)
    assert calls == [] and again["resumed"] == n and without_resumed(again) == without_resumed(whole)


def test_a_torn_last_line_is_dropped(index_dir: Path, dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    _, whole = invoke(index_dir, dataset, "retrieval", run)
    full = run.read_bytes()
    run.write_bytes(full[: full.rstrip(b"\n").rfind(b"\n") + 20])  # the last row cut after 19 bytes
    _, resumed = invoke(index_dir, dataset, "retrieval", run)
    assert resumed["resumed"] == N_RETRIEVAL - 1 and without_resumed(resumed) == without_resumed(whole)
    assert run.read_bytes() == full


def test_appending_after_a_torn_line_writes_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rows = [RunRow(i, "d.pdf", [1], [1, 2], [1], {"mrr": 1.0}) for i in range(3)]
    with RunFile.open(path, {"pool": "bm25"}, RunRow) as run:
        run.append(rows[:2])
    path.write_bytes(path.read_bytes() + row_to_json(rows[2]).encode()[:10])  # killed mid-write
    with RunFile.open(path, {"pool": "bm25"}, RunRow) as run:
        assert sorted(run.rows) == [0, 1]
        run.append(rows[2:])
    lines = path.read_text().splitlines()
    assert [row_from_dict(RunRow, json.loads(line)) for line in lines] == rows


def test_a_second_run_on_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with RunFile.open(path, {}, RunRow), pytest.raises(TridentError, match="in use"):
        RunFile.open(path, {}, RunRow)


def test_other_settings_are_refused(index_dir: Path, dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    invoke(index_dir, dataset, "qa", run, "--limit", "2")
    rows = run.read_bytes()

    res, _ = invoke(index_dir, dataset, "qa", run, "--limit", "2", "--pool", "dense", code=2)
    msg = " ".join(res.stderr.split())
    assert "other settings: pool ('bm25' -> 'dense')" in msg and "--fresh" in msg
    res, _ = invoke(index_dir, dataset, "retrieval", run, code=2)
    assert "command ('eval qa' -> 'eval retrieval')" in " ".join(res.stderr.split())

    dataset.write_text(dataset.read_text().replace("1998", "2002"))  # the same path, other questions
    res, _ = invoke(index_dir, dataset, "qa", run, "--limit", "2", code=2)
    assert "dataset_sha256 differs" in " ".join(res.stderr.split())
    assert run.read_bytes() == rows  # nothing lost

    settings_path(run).unlink()
    res, _ = invoke(index_dir, dataset, "qa", run, "--limit", "2", code=2)
    assert "settings it was run with are unknown" in " ".join(res.stderr.split())


def test_fresh_starts_over(index_dir: Path, dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    _, first = invoke(index_dir, dataset, "retrieval", run, "--limit", "2")
    assert first["n"] == 2 and len(run.read_text().splitlines()) == 2
    _, fresh = invoke(index_dir, dataset, "retrieval", run, "--fresh")
    assert fresh["resumed"] == 0 and fresh["n"] == N_RETRIEVAL
    assert len(run.read_text().splitlines()) == N_RETRIEVAL
    assert json.loads(settings_path(run).read_text())["limit"] is None  # the new settings
    _, again = invoke(index_dir, dataset, "retrieval", run)
    assert again["resumed"] == N_RETRIEVAL

    res = runner.invoke(
        app, ["eval", "qa", "--index", str(index_dir), "--dataset", str(dataset), "--fresh"]
    )
    assert res.exit_code == 2 and "--run" in res.stderr


def test_index_identity_follows_documents_not_pool_builds(index_dir: Path, tmp_path: Path) -> None:
    """A pool built lazily during a run must not make its rows look stale; annotating must."""
    import shutil

    idx = Index.open(shutil.copytree(index_dir, tmp_path / "ix"))
    before = index_identity(idx.store)
    with idx.store.writer_lock():
        idx.store.manifest.pools.clear()  # as before a lazy build
        idx.store.save_manifest()
    assert index_identity(Index.open(tmp_path / "ix").store) == before
    idx.store.mark(idx.store.doc_ids()[0], "annotate", False)
    assert index_identity(Index.open(tmp_path / "ix").store) != before


def test_rows_round_trip_through_json() -> None:
    qa = QARow(
        3, "d.pdf", "Größe?", "0.3", "Float", ["Table"], "It is 0.3 ± 0.1", "0.3", "as-is", 0.1 + 0.2,
        [2, 1], [2], "evidence-first", {"mode": "no-model", "fallback": False, "scores": [0.5, 1e-9]},
        None, "", "supported",
    )
    retrieval = [RunRow(1, "d.pdf", [2], [2, 3], [2], {"mrr": 1 / 3}, fb) for fb in (None, True, False)]
    for row in (qa, *retrieval):
        line = row_to_json(row)
        back = row_from_dict(type(row), json.loads(line))
        assert back == row and row_to_json(back) == line
    with pytest.raises(TypeError, match="unknown keys"):
        row_from_dict(RunRow, {**json.loads(row_to_json(retrieval[0])), "extra": 1})


def test_resume_on_ray_sends_out_only_the_rest(
    index_dir: Path, dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_local
) -> None:
    from trident_local.scale import ray_eval

    _, whole = invoke(index_dir, dataset, "retrieval", tmp_path / "whole.jsonl")
    part = tmp_path / "ray.jsonl"
    real, sent, written = ray_eval.run_sharded, [], []

    def spy(index, records, *args, on_shard, **kwargs):
        def kept(rows: list) -> None:
            on_shard(rows)
            written.append(part.read_bytes().count(b"\n"))  # rows in the file after each shard

        sent.extend(r.qid for r in records)
        return real(index, records, *args, on_shard=kept, **kwargs)

    monkeypatch.setattr(ray_eval, "run_sharded", spy)
    with monkeypatch.context() as m:
        count_calls(m, "retrieval", stop_after=2)
        runner.invoke(
            app,
            [*COMMANDS["retrieval"][0], "--index", str(index_dir), "--dataset", str(dataset), "--run", str(part)],
        )
    _, resumed = invoke(index_dir, dataset, "retrieval", part, "--ray", "auto", "--workers", "1")
    assert resumed["resumed"] == 2 and without_resumed(resumed) == without_resumed(whole)
    assert len(sent) == N_RETRIEVAL - 2
    assert len(written) > 1 and written == sorted(set(written)) and written[-1] == N_RETRIEVAL
    assert part.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()


KILLED_RUN = """
import sys, time
import trident_local.generate.ask as a
real = a.ask
def slow(*args, **kwargs):
    time.sleep(0.4)
    return real(*args, **kwargs)
a.ask = slow
from trident_local.cli import app

app(sys.argv[1:])
"""


def test_a_run_killed_with_sigkill_resumes(index_dir: Path, dataset: Path, tmp_path: Path) -> None:
    _, whole = invoke(index_dir, dataset, "qa", tmp_path / "whole.jsonl")
    run = tmp_path / "run.jsonl"
    args = [*COMMANDS["qa"][0], "--index", str(index_dir), "--dataset", str(dataset), "--run", str(run)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, *args], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (run.exists() and len(run.read_bytes().splitlines()) >= 2):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no rows written"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        proc.stderr.close()
    kept = run.read_bytes().count(b"\n")  # whole rows; the kill may have torn the next one
    assert proc.returncode == -signal.SIGKILL and 2 <= kept < N_QA
    _, resumed = invoke(index_dir, dataset, "qa", run)
    assert resumed["resumed"] == kept and without_resumed(resumed) == without_resumed(whole)
    assert run.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
