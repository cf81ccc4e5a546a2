"""benchmarks/README.md is generated: report.py renders it from the scripts' docstrings and the recorded
results (benchmarks/results/<name>.json, written by benchmarks/_results.py), and the committed file is current."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_module import load

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"


report = load("report")
results = load("_results")

FAKE = {
    "name": "alpha",
    "command": ".venv/bin/python benchmarks/alpha.py --size 10",
    "commit": "abc1234",
    "date": "2026-01-02T03:04:05Z",
    "machine": {"cpu": "Test CPU", "cores": 4, "load_start": [0.5, 0.4, 0.3], "load_end": [0.75, 0.5, 0.3],
                "ram_gib": 16.0, "gpu": None},
    "table": {"title": "alpha at size 10", "columns": ["size", "items/s"], "rows": [["10", "123.4"]],
              "notes": "a note on alpha"},
    "figures": {"rate": 123.4},
}


def test_committed_readme_is_what_report_renders() -> None:
    proc = subprocess.run([sys.executable, str(BENCH / "report.py"), "--check"], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]


def test_render_shows_a_recorded_table_and_its_run_line_or_how_to_record_one(tmp_path: Path) -> None:
    bench, res = tmp_path / "bench", tmp_path / "results"
    bench.mkdir()
    res.mkdir()
    (bench / "alpha.py").write_text('"""Alpha throughput.\n\nMeasures alpha.\n\n'
                                    '    .venv/bin/python benchmarks/alpha.py --size 10\n"""\n')
    (bench / "beta.py").write_text('"""Beta quality.\n\n    .venv/bin/python benchmarks/beta.py --full  # slow\n"""\n')
    (bench / "_helper.py").write_text('"""Not a benchmark."""\n')
    (res / "alpha.json").write_text(json.dumps(FAKE))

    text = report.render(bench, res)
    assert text == report.render(bench, res)  # deterministic
    assert "## alpha.py — Alpha throughput" in text and "## beta.py — Beta quality" in text
    assert text.index("## alpha.py") < text.index("## beta.py") and "_helper" not in text
    assert "```\n.venv/bin/python benchmarks/alpha.py --size 10\n```" in text  # docstring code, fenced
    assert "| size | items/s |\n|---|---|\n| 10 | 123.4 |" in text
    assert "a note on alpha" in text
    assert ("`abc1234` · 2026-01-02 03:04:05 UTC · Test CPU, 4 cores, load 0.50 → 0.75, 16.0 GiB RAM · "
            "`.venv/bin/python benchmarks/alpha.py --size 10`") in text
    beta = text[text.index("## beta.py"):]
    assert "No recorded run yet: run `.venv/bin/python benchmarks/beta.py --full`." in beta
    assert "No recorded run yet" not in text[:text.index("## beta.py")]


def test_check_fails_with_a_diff_when_the_readme_is_stale(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(report.render() + "a hand edit\n", encoding="utf-8")
    assert report.main(["--check", "--readme", str(readme)]) == 1
    assert report.main(["--readme", str(readme)]) == 0 and report.main(["--check", "--readme", str(readme)]) == 0


def test_write_result_writes_every_field(tmp_path: Path) -> None:
    table = {"title": "t", "columns": ["a", "b"], "rows": [["1", 2.5]], "notes": "n"}
    path = results.write_result("gamma", {"x": 1.5, "p": Path("/tmp/x"), "inf": float("inf")}, table,
                                args={"size": 3}, argv=["--size", "3"], script=str(BENCH / "gamma.py"),
                                results_dir=tmp_path)
    assert path == tmp_path / "gamma.json"
    data = json.loads(path.read_text())
    for key in ("name", "command", "commit", "date", "machine", "table", "figures", "args"):
        assert data[key] not in (None, "", {}), key
    assert data["name"] == "gamma" and data["recorded_configuration"] is True
    assert data["command"].endswith("benchmarks/gamma.py --size 3")
    assert data["command"].split()[0].endswith("python")
    assert data["commit"] == "unknown" or len(data["commit"].removesuffix("-dirty")) >= 7
    assert data["date"].endswith("Z") and data["date"][:2] == "20"
    m = data["machine"]
    for key in ("cpu", "cores", "load_start", "load_end", "ram_gib", "gpu"):
        assert key in m, key
    assert len(m["load_start"]) == 3 and len(m["load_end"]) == 3 and m["cores"] >= 1
    assert m["numpy"] and m["gpu"] is None  # numpy is imported here; no CUDA in this process
    assert data["table"] == {"title": "t", "columns": ["a", "b"], "rows": [["1", 2.5]], "notes": "n"}
    assert data["figures"] == {"x": 1.5, "p": "/tmp/x", "inf": "inf"}
    assert data["args"] == {"size": 3}


def test_a_toy_run_is_not_recorded_and_a_broken_table_keeps_the_figures(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("TRIDENT_BENCH_RESULTS", raising=False)
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    assert results.write_result("delta", {"x": 1}, {"columns": ["a"], "rows": []}, args={}, full=False) is None
    assert list(tmp_path.iterdir()) == []
    path = results.write_result("delta", {"x": 1}, lambda: {"columns": ["a"], "rows": [["1", "2"]]}, args={})
    data = json.loads(path.read_text())
    assert data["figures"] == {"x": 1} and data["table"]["rows"] == [] and "not built" in data["table"]["notes"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_recorded_results_are_tracked_and_other_outputs_are_ignored() -> None:
    names = [n for s in report.script_names() if s not in report.NO_RESULT
             for n in report.RESULT_NAMES.get(s, {s: ""})]
    paths = [f"benchmarks/results/{n}.json" for n in names]
    others = ["benchmarks/results/rerank_gate.json", "benchmarks/results/ann_scaling.png",
              "benchmarks/results/chat_batching/chat_batching.json", "benchmarks/results/maxsim-toy.json"]
    proc = subprocess.run(["git", "check-ignore", "--no-index", *paths, *others], capture_output=True, text=True,
                          cwd=REPO, timeout=30)
    ignored = set(proc.stdout.split())
    assert not ignored & set(paths), sorted(ignored & set(paths))
    assert ignored >= set(others), sorted(set(others) - ignored)
