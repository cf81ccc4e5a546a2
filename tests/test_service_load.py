"""The load benchmark runs end to end: concurrent asks while PDFs are uploaded and indexed, no
errors, and the index intact afterwards (a short run; the measured table comes from longer ones)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]


def test_service_load_short_run_has_no_errors_and_leaves_the_index_intact(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "service_load.py"), "--clients", "2", "--seconds", "3",
         "--pdfs", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(out.read_text())
    (row,) = data["rows"]
    assert row["clients"] == 2 and row["requests"] > 0 and row["errors"] == 0, row
    assert row["upload"]["state"] == "done" and row["upload"]["pages"] > 0
    check = data["index_check"]
    assert check["intact"] and not check["unfinished"] and not check["stale_pools"] and not check["uploads_not_found"]
