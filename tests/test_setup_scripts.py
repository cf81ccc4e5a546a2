"""The setup scripts' disk check: a machine short of disk gets one clear line before pip starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

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


def test_both_setup_scripts_stop_on_short_disk_before_installing(tmp_path):
    """Each script run on a machine whose df reports almost no free space stops with the disk line,
    and pip is never called (a fake pip on PATH records any call)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "df").write_text("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available'\necho 'disk 1 1 1024'\n")
    calls = tmp_path / "pip-calls"
    for tool in ("pip", "python3.11", "python3"):  # a venv's python -m pip, or pip itself, would be recorded
        (bin_dir / tool).write_text(f"#!/bin/sh\necho \"$0 $*\" >> {calls}\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    work = tmp_path / "work"
    (work / "scripts").mkdir(parents=True)
    for name in ("setup.sh", "setup_engine.sh", "disk_check.sh"):
        (work / "scripts" / name).write_text((ROOT / "scripts" / name).read_text())
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    for name in ("setup.sh", "setup_engine.sh"):
        run = subprocess.run(["bash", f"scripts/{name}"], cwd=work, capture_output=True, text=True, timeout=60,
                             env={"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHON": str(bin_dir / "python3.11"),
                                  "HOME": str(tmp_path)})
        assert run.returncode != 0 and "GiB free" in run.stderr, (name, run.stdout, run.stderr)
        assert not calls.exists() or "install" not in calls.read_text(), calls.read_text()


def test_small_tmpdir_moves_pip_temp_files_to_the_project_disk(tmp_path):
    """A small tmpfs for $TMPDIR (a fake df reporting 100 MiB free) -> .venv-tmp/ under the
    working directory, removed when the script exits."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "df").write_text("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available'\necho 'tmpfs 1 1 102400'\n")
    (bin_dir / "df").chmod(0o755)
    work = tmp_path / "work"
    (work / "scripts").mkdir(parents=True)
    (work / "scripts" / "disk_check.sh").write_text((ROOT / "scripts" / "disk_check.sh").read_text())
    script = '. scripts/disk_check.sh; roomy_tmpdir; echo "TMPDIR=$TMPDIR"; test -d "$TMPDIR" && echo made'
    run = subprocess.run(["bash", "-c", script], cwd=work, capture_output=True, text=True, timeout=30,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert f"TMPDIR={work}/.venv-tmp" in run.stdout and "made" in run.stdout
    assert "100 MiB free" in run.stdout
    assert not (work / ".venv-tmp").exists()  # the trap cleaned up


def test_roomy_tmpdir_is_left_alone(tmp_path):
    script = '. scripts/disk_check.sh; roomy_tmpdir; echo "TMPDIR=$TMPDIR"'
    run = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30,
                         env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert run.stdout.strip() == f"TMPDIR={tmp_path}"
