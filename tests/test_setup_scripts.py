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
