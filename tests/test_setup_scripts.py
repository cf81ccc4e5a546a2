"""The setup scripts' disk check: a machine short of disk gets one clear line before pip starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def need_disk(gib: int, directory: Path) -> subprocess.CompletedProcess[str]:
    script = f'. scripts/disk_check.sh; need_disk {gib} "{directory}" "the thing"; echo went-on'
    return subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30)


def test_short_disk_stops_with_the_amounts(tmp_path):
    run = need_disk(1 << 30, tmp_path)  # a billion GiB: no disk has that
    assert run.returncode == 1
    assert "went-on" not in run.stdout
    assert "the thing needs about 1073741824 GiB free" in run.stderr
    assert "nothing was installed" in run.stderr


def test_enough_disk_goes_on(tmp_path):
    run = need_disk(0, tmp_path)
    assert run.returncode == 0 and "went-on" in run.stdout and run.stderr == ""


def test_both_setup_scripts_check_before_installing():
    for name in ("setup.sh", "setup_engine.sh"):
        text = (ROOT / "scripts" / name).read_text()
        assert text.index("need_disk ") < text.index("$PIP install")
