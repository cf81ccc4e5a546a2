"""One JSON convention for every subcommand: `--json FILE`, `-` = stdout, and then stdout holds only JSON.

Every command that has the option is run with `--json -` on a small index of the sample PDFs and its
stdout must parse as one JSON document; a walk over the command tree makes sure none is left out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from trident_local.cli import app

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
HELIOS = "helios_annual_report_2023"

MMLB = [  # MMLongBench-Doc layout
    {"doc_id": f"{HELIOS}.pdf", "question": "What was the revenue of the Coastal region in 2023?",
     "answer": "95.2", "evidence_pages": "[2]", "evidence_sources": "['Table']", "answer_format": "Float"},
    {"doc_id": f"{HELIOS}.pdf", "question": "How many megawatts of new solar capacity were connected in 2023?",
     "answer": "412", "evidence_pages": "[1]", "evidence_sources": "['Pure-text']", "answer_format": "Int"},
    {"doc_id": "sparse_page_retrieval.pdf", "question": "Which method gives the best MRR?", "answer": "RRF",
     "evidence_pages": "[2]", "evidence_sources": "['Table']", "answer_format": "Str"},
]
TRACE = [  # LitTraceQA layout
    {"id": "s1", "question": "What was the revenue of the Coastal region in Table 1?", "answer_format": "free_form",
     "answer": "95.2", "gold_papers": [HELIOS],
     "gold_evidence": [{"paper": HELIOS, "page": 2, "type": "table", "object": "Table 1", "quote": "Coastal"}],
     "multi_paper": False},
]


def json_commands(cmd, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Paths of every (sub)command with a --json option (typer builds the click command tree)."""
    found = {path} if any("--json" in getattr(p, "opts", ()) for p in cmd.params) else set()
    for name, sub in getattr(cmd, "commands", {}).items():
        found |= json_commands(sub, (*path, name))
    return found


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("clijson")
    (d / "mmlb.json").write_text(json.dumps(MMLB))
    (d / "trace.json").write_text(json.dumps(TRACE))
    (d / "answer.txt").write_text("The Coastal region had revenue of 95.2 million dollars in 2023 [p. 1].")
    return d


def commands(d: Path) -> dict[tuple[str, ...], list[str]]:
    """Arguments per command path, in an order where each one's inputs exist (index first)."""
    ix = str(d / "ix")
    return {
        ("index",): ["index", str(SAMPLES), "--index", ix, "--pools", "bm25", "--ocr", "none", "--annotate",
                     "--workers", "1"],
        ("docs",): ["docs", "--index", ix],
        ("annotate",): ["annotate", "--index", ix],
        ("search",): ["search", "revenue of the Coastal region", "--index", ix, "--pool", "bm25"],
        ("ask",): ["ask", "What was the revenue of the Coastal region in 2023?", "--index", ix, "--pool", "bm25"],
        ("verify",): ["verify", str(d / "answer.txt"), "--index", ix, "--doc", HELIOS, "--text-judge", "none"],
        ("trace",): ["trace", "What was the revenue of the Coastal region?", "--index", ix],
        ("models", "list"): ["models", "list"],
        ("models", "show"): ["models", "show", "qwen2.5-vl-7b-instruct"],
        ("eval", "retrieval"): ["eval", "retrieval", "--index", ix, "--dataset", str(d / "mmlb.json"),
                                "--pool", "bm25"],
        ("eval", "qa"): ["eval", "qa", "--index", ix, "--dataset", str(d / "mmlb.json"), "--pool", "bm25"],
        ("eval", "grounding"): ["eval", "grounding", "--index", ix, "--dataset", str(d / "mmlb.json"),
                                "--pool", "bm25"],
        ("eval", "citations", "build"): ["eval", "citations", "build", "--index", ix, "--dataset",
                                         str(d / "mmlb.json"), "--out", str(d / "inst.jsonl")],
        ("eval", "citations", "run"): ["eval", "citations", "run", "--index", ix, "--instances",
                                       str(d / "inst.jsonl"), "--split", "all", "--no-calibrate",
                                       "--bootstrap", "10"],
        ("eval", "trace"): ["eval", "trace", "--index", ix, "--dataset", str(d / "trace.json"),
                            "--save-preds", str(d / "preds")],
        ("eval", "trace", "score"): ["eval", "trace", "score", "--gold", str(d / "trace.json"), "--pred",
                                     str(d / "preds" / "end_to_end.jsonl")],
    }


def test_every_json_command_writes_only_json_to_stdout(work: Path) -> None:
    cmds = commands(work)
    assert json_commands(typer.main.get_command(app)) == set(cmds), "a command with --json is not covered here"
    runner = CliRunner()
    for path, args in cmds.items():
        res = runner.invoke(app, [*args, "--json", "-"], env={"COLUMNS": "120"})
        assert res.exit_code == 0, (path, res.output)
        data = json.loads(res.stdout)  # nothing but the JSON document
        assert data, path
        assert res.stderr.strip(), path  # the human-readable report went to stderr instead
    # the same option with a file name: the file gets the JSON, stdout the tables
    out = work / "docs.json"
    res = runner.invoke(app, ["docs", "--index", str(work / "ix"), "--json", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "sparse_page_retrieval.pdf" in res.stdout
    assert {e["file_name"] for e in json.loads(out.read_text())} == {f"{HELIOS}.pdf", "sparse_page_retrieval.pdf"}


def test_json_needs_a_file_argument(work: Path) -> None:
    res = CliRunner().invoke(app, ["models", "list", "--json"])
    assert res.exit_code == 2 and "requires an argument" in res.output


NOISY = """
import os, subprocess, sys
import typer
from trident_local.cli.common import cli_command, json_option, write_json

app = typer.Typer()

@app.command()
@cli_command
def main(json_out: str = json_option()) -> None:
    print("python print")
    sys.__stdout__.write("buffered on the real stdout\\n")
    os.write(1, b"fd 1 write\\n")
    subprocess.run([sys.executable, "-c", "print('child process')"], check=True)
    write_json(json_out, {"ok": True})
    print("after the json")

app()
"""


def test_stdout_is_reserved_at_the_file_descriptor_level(tmp_path: Path) -> None:
    """Library prints, raw fd-1 writes and child processes (as a vLLM engine core) all land on stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])}
    res = subprocess.run([sys.executable, "-c", NOISY, "--json", "-"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"ok": True}
    for line in ("python print", "buffered on the real stdout", "fd 1 write", "child process", "after the json"):
        assert line in res.stderr
    res = subprocess.run([sys.executable, "-c", NOISY], env=env, capture_output=True, text=True, timeout=120)
    assert "child process" in res.stdout and "fd 1 write" in res.stdout
