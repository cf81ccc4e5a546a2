"""scripts/gpu_check.sh --dry-run: every step of the lent-GPU script at toy size on the CPU, so that the
script a GPU session runs as is has run before, and its table reads every step's result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
STEPS = ["tests", "vlm_chat", "maxsim", "maxsim_large", "pages", "caption"]


def test_gpu_check_dry_run_runs_every_step_and_prints_one_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable, "GPU_CHECK_BUDGET_S": "900"}
    res = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=1200)
    log = (out / "gpu_check.log").read_text() if (out / "gpu_check.log").exists() else ""
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:] + log[-4000:]
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == STEPS
    assert all(s["status"] == "ok" for s in steps), steps
    for name in ("env.json", "tests.xml", "vlm_chat.xml", "maxsim.json", "maxsim_large.json",
                 "page_embedding.json", "caption.json", "table.txt"):
        assert (out / name).is_file(), name
    assert json.loads((out / "env.json").read_text())["dry_run"] is True
    table = (out / "table.txt").read_text()
    assert table in res.stdout  # printed once, at the end
    lines = {ln.split()[0]: ln for ln in table.splitlines()[3:]}
    assert list(lines) == STEPS
    assert "skipped" in lines["tests"]  # -m gpu collected, each skipped without CUDA
    assert "1 passed" in lines["vlm_chat"]
    assert "50 p fp32" in lines["maxsim"] and "max err" in lines["maxsim"] and "colpali-engine" in lines["maxsim"]
    assert "1000 p bf16" in lines["maxsim_large"]
    assert "pages/s at batch" in lines["pages"] and "decode" in lines["caption"]
    assert not list((ROOT / "benchmarks" / "results").glob("*gpu-check*"))  # nothing written into the repo
