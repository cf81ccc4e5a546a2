"""The import layers hold and no module imports itself round a circle (pyproject's [tool.importlinter],
scripts/check_imports.py): the commands a developer runs, run here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_are_kept() -> None:
    pytest.importorskip("importlinter", reason="import-linter comes with the [dev] extra")
    res = run(str(Path(sys.executable).with_name("lint-imports")), "--no-cache", "--no-logo")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout


def test_no_import_circle_between_modules() -> None:
    pytest.importorskip("grimp", reason="grimp comes with import-linter, in the [dev] extra")
    res = run(sys.executable, "scripts/check_imports.py")
    assert res.returncode == 0, res.stdout + res.stderr
