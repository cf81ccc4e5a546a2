"""Processes an engine starts end with their command (trident_local/models/engine_guard.py), on stand-ins.

A stand-in "command" calls ``guard_engine_processes()`` as the vLLM backend does, then starts what vLLM
starts: a process through multiprocessing's spawn (the engine core; it starts its own worker through
spawn too) and one forked without an exec (which keeps no new environment). The command is then ended
the ways a user, ``timeout`` or a scheduler end it, and no process of its tree may be left 15 s later.
The same on the real engine: tests/test_engine_signals.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
WITHIN_S = 15.0

COMMAND = r"""
import json, multiprocessing as mp, os, sys, time
from trident_local.models.engine_guard import guard_engine_processes, interrupt_ends_engines

def worker():
    time.sleep(600)

def engine_core():
    mp.get_context("spawn").Process(target=worker).start()  # vLLM's EngineCore starts its Worker
    time.sleep(600)

if __name__ == "__main__":
    interrupt_ends_engines()  # what `trident` does first
    guard_engine_processes()  # what the vLLM backend does before it starts an engine
    mp.get_context("spawn").Process(target=engine_core).start()
    forked = os.fork()
    if forked == 0:
        time.sleep(600)
        os._exit(0)
    time.sleep(3)  # the spawned processes start, and the watchdog notes them
    print(json.dumps({"ready": True}), flush=True)
    time.sleep(600)
"""


def tree(pid: int) -> list[psutil.Process]:
    p = psutil.Process(pid)
    return [p, *p.children(recursive=True)]


def left_after(procs: list[psutil.Process], seconds: float) -> list[str]:
    """Processes of ``procs`` still alive after ``seconds`` (the same pid and start time)."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in alive]
        time.sleep(0.25)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL])
def test_every_process_of_a_guarded_command_ends_with_it(sig: int, tmp_path: Path) -> None:
    script = tmp_path / "command.py"
    script.write_text(COMMAND)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "kernels")])}
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert json.loads(proc.stdout.readline()) == {"ready": True}, proc.stderr.read()
        procs = tree(proc.pid)
        names = [" ".join(p.cmdline()) for p in procs]
        assert sum("spawn_main" in n for n in names) == 2, names  # the engine core and its worker
        assert sum("resource_tracker" in n for n in names) == 1, names
        assert sum("engine_guard" in n for n in names) == 1, names  # the watchdog
        assert len(procs) == 6, names  # + the command and its forked child
        os.kill(proc.pid, sig)
        proc.wait(WITHIN_S)
        assert left_after(procs, WITHIN_S) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
