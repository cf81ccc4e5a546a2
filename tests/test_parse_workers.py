"""Parse workers are forked: what they inherit from the parent must stay untouched in them."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from trident_local.docs.workers import ParserProcesses


class _Native:
    """Stands for an inherited native object whose destructor must not run in a worker (OpenVINO's
    compiled model waits there for threads a forked child does not have)."""

    def __init__(self, log: Path):
        self.log, self.me = log, self  # a cycle: only the collector frees it

    def __del__(self) -> None:
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")


def _collect_and_pid() -> int:
    gc.collect()
    return os.getpid()


def test_a_parse_worker_never_collects_what_it_inherited(tmp_path: Path) -> None:
    log = tmp_path / "collected.txt"
    gc.disable()
    try:
        _Native(log)  # garbage as soon as it is made, left for a collection
        pool = ParserProcesses(2, "none")
        executor = pool._new_executor(1)
        try:
            worker = executor.submit(_collect_and_pid).result(timeout=60)
        finally:
            executor.shutdown(wait=True)
    finally:
        gc.enable()
    gc.collect()
    pids = log.read_text(encoding="utf-8").split() if log.exists() else []
    assert str(worker) not in pids and str(os.getpid()) in pids  # freed by the parent, never by the worker
