"""No-model asks and searches in worker processes, so the event loop's process keeps its CPU for HTTP.

A no-model ask is pure Python and numpy work: run in threads of the process that runs the event loop,
it holds the GIL, and under load ``/health`` and every 429 wait behind it. As vLLM keeps its engine
core out of the API process, these run in a pool of worker processes (``ask_workers``), each with
its own :class:`~trident_local.serve.engine.Engine` over the same index directories. The server
keeps the index's read lock while a worker reads (so no pool rebuild runs under it) and passes the
index's generation, so a worker re-opens its snapshot after each write. Asks with a chat model stay
in threads: the model's engine (vLLM's async engine, the batcher) lives in the server process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_local.models.profiles import NO_MODEL

if TYPE_CHECKING:
    from trident_local.serve.engine import Engine, IndexHandle

# The workers yield the CPU to the server's event loop (health checks, 429s, uploads) when both want it;
# on an otherwise idle machine a nice value costs them nothing.
WORKER_NICE = 5

_engine: Engine | None = None
_generations: dict[str, int] = {}


def _start(chat: str, indexes: dict[str, str]) -> None:
    """A worker's start: its engine, every served index open, the query embedder loaded by one search."""
    global _engine
    from trident_local.serve.engine import Engine

    _die_with_parent()
    os.nice(WORKER_NICE)
    _engine = Engine({}, chat=chat)
    for name, path in indexes.items():
        # an empty index, a pool not built yet: the first real call says what is wrong
        with contextlib.suppress(Exception):
            _at(name, path, 0).search(name, "warm up", docs=None, pool="fused", k=1)


def _die_with_parent() -> None:
    """Linux: the kernel sends this worker SIGTERM when the thread that started it ends (the server's event
    loop thread, see :meth:`Workers.start`), however the server ends."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def _at(name: str, path: str, generation: int) -> Engine:
    """This worker's engine with ``name`` open at ``generation`` (re-opened after a write)."""
    from trident_local.serve.engine import IndexHandle

    assert _engine is not None
    h = _engine.handles.get(name)
    if h is None or str(h.path) != path:
        h = _engine.handles[name] = IndexHandle(name, Path(path), _engine.chat, _engine.cache)
        _generations[name] = generation
    elif _generations.get(name) != generation:
        with h.lock.write():
            h.publish()
        _generations[name] = generation
    return _engine


def _call(method: str, name: str, path: str, generation: int, args: tuple, kwargs: dict[str, Any]) -> Any:
    return getattr(_at(name, path, generation), method)(name, *args, **kwargs)


def auto_workers(slots: int) -> int:
    """``ask_workers = -1``: one worker per CPU core, at most one per model slot."""
    return min(slots, os.cpu_count() or 1)


def _ready() -> int:
    return os.getpid()


class Workers:
    """A pool of worker processes for the no-model calls of :data:`METHODS` (``n`` = 0: none)."""

    METHODS = ("ask", "search")

    def __init__(self, n: int, chat: str = "", indexes: dict[str, str] | None = None):
        self.n = n
        self._started = False
        self._pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_start,
                                         initargs=(chat, dict(indexes or {}))) if n > 0 else None

    def takes(self, handle: IndexHandle) -> bool:
        """Whether calls on ``handle`` run in a worker: the workers started and the index runs no chat model."""
        return self._started and handle.models.profile_name("chat") == NO_MODEL

    def wanted(self, handles: Iterable[IndexHandle]) -> bool:
        """Whether any of ``handles`` would run its calls in a worker once they are started."""
        return self._pool is not None and any(h.models.profile_name("chat") == NO_MODEL for h in handles)

    def call(self, engine: Engine, method: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """``engine.<method>(name, ...)``, in a worker when it takes the index (blocks: run it in a thread)."""
        h = engine.handle(name)
        if method not in self.METHODS or not self.takes(h):
            return getattr(engine, method)(name, *args, **kwargs)
        assert self._pool is not None
        with h.lock.read():  # no pool rebuild while the worker reads; its generation is the one it opens
            return self._pool.submit(_call, method, name, str(h.path), h.generation, args, kwargs).result()

    def start(self) -> None:
        """Start every worker now, in the background (each imports the library and opens the indexes
        once), from the thread that runs the event loop: a worker's parent-death signal follows the
        thread that started it, and that one lives as long as the server. Calls go to the workers
        only after this (an index created later without workers started asks in threads)."""
        if self._pool is not None:
            for _ in range(self.n):
                self._pool.submit(_ready)
            self._started = True

    def close(self) -> None:
        """Stop the workers now: the drain time for requests in flight has passed when this runs."""
        if self._pool is not None:
            procs = list(getattr(self._pool, "_processes", {}).values())
            self._pool.shutdown(wait=False, cancel_futures=True)
            for p in procs:  # an ask still running has no one left to answer
                p.terminate()
