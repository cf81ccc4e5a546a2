"""Processes an engine starts end with the process that started it, however that process ends.

vLLM runs its ``EngineCore`` and ``Worker`` in processes of their own (multiprocessing, plus
its resource tracker). They stop when the engine is shut down in an orderly way, but a
command ended by a signal's default action (SIGTERM from ``timeout``, systemd or a batch
scheduler, SIGHUP when its terminal closes) or by ``kill -9`` runs no shutdown: the engine's
processes are re-parented to init and keep their memory (6 GB on a CPU) and CPU.

:func:`guard_engine_processes`, called before an engine starts, makes them die with their
command:

- it marks the process environment (``TRIDENT_ENGINE_OWNER=<pid>-<random>``): every process
  the engine spawns inherits the mark, whatever re-parents it later;
- it starts one small watchdog process (``python -m trident_local.models.engine_guard``), a
  child of the command that ignores SIGINT, SIGTERM and SIGHUP. It notes the command's
  descendants every :data:`POLL_S` seconds (processes forked without an exec keep no new
  environment) and, once the command is gone (its parent pid changes: any exit, any signal,
  ``kill -9``), sends SIGTERM to every process with the mark or among the noted ones, waits
  :data:`GRACE_S` seconds, sends SIGKILL to those left, and exits.

The watchdog needs ``psutil`` (a requirement of vLLM, so present wherever vLLM is); without
it nothing is started and the engine runs unguarded, as before.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from typing import Any

ENV = "TRIDENT_ENGINE_OWNER"
POLL_S = 0.5  # how often the watchdog checks its command and notes the command's descendants
GRACE_S = 5.0  # between SIGTERM and SIGKILL of what the command left behind

_watchdog: subprocess.Popen | None = None


def guard_engine_processes() -> subprocess.Popen | None:
    """Mark this process's environment and start its watchdog (once per process); returns the watchdog."""
    global _watchdog
    if _watchdog is not None and _watchdog.poll() is None:
        return _watchdog
    try:
        import psutil  # noqa: F401  (the watchdog's; checked here so that a missing one fails nothing)
    except ImportError:
        return None
    token = f"{os.getpid()}-{secrets.token_hex(6)}"
    os.environ[ENV] = token  # before the engine spawns anything: its processes inherit it
    env = {k: v for k, v in os.environ.items() if k != ENV}  # the watchdog itself is not one to end
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)  # a script's sys.path
    _watchdog = subprocess.Popen(
        [sys.executable, "-m", "trident_local.models.engine_guard", str(os.getpid()), token],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env, close_fds=True,
    )
    return _watchdog


def guarded() -> bool:
    """Whether this process started an engine watchdog."""
    return _watchdog is not None


def interrupt_ends_engines() -> None:
    """For a command's main thread: Ctrl-C (SIGINT) ends the command at once when it has started an
    engine (the watchdog then ends the engine's processes), and raises KeyboardInterrupt otherwise.

    An interrupted command that unwinds normally would run vLLM's exit hooks and then wait for
    threads and processes an interrupted engine may never finish; SIGTERM and SIGHUP keep their
    default action (end the process), which is what the watchdog needs."""

    def on_interrupt(signum: int, frame: Any) -> None:
        if not guarded():
            raise KeyboardInterrupt
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGINT, on_interrupt)


def _left_behind(token: str, noted: dict[int, float]) -> list[Any]:
    """Live processes carrying ``token``, or noted as the command's descendants, and their descendants."""
    import psutil

    me = os.getpid()
    found: dict[int, Any] = {}
    for p in psutil.process_iter():
        if p.pid == me:
            continue
        try:
            if noted.get(p.pid) == p.create_time() or p.environ().get(ENV) == token:
                found[p.pid] = p
        except (psutil.Error, OSError):
            continue
    for p in list(found.values()):
        try:
            for c in p.children(recursive=True):
                if c.pid != me:
                    found.setdefault(c.pid, c)
        except psutil.Error:
            continue
    return list(found.values())


def end_processes(procs: list[Any], grace_s: float = GRACE_S) -> int:
    """SIGTERM ``procs`` (psutil processes), SIGKILL those alive after ``grace_s``; returns how many were ended."""
    import psutil

    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=grace_s)
    return len(procs)


def watch(owner: int, token: str, poll_s: float = POLL_S) -> int:
    """The watchdog's loop: note the owner's descendants until the owner is gone, then end what it left."""
    import psutil

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a group-wide signal is the owner's to act on
        signal.signal(sig, signal.SIG_IGN)
    noted: dict[int, float] = {}
    me = os.getpid()
    try:
        parent = psutil.Process(owner)
        while os.getppid() == owner:
            for c in parent.children(recursive=True):
                if c.pid != me:
                    with contextlib.suppress(psutil.Error):
                        noted[c.pid] = c.create_time()
            time.sleep(poll_s)
    except psutil.Error:  # the owner is gone
        pass
    return end_processes(_left_behind(token, noted))


if __name__ == "__main__":
    sys.exit(0 if watch(int(sys.argv[1]), sys.argv[2]) >= 0 else 1)
