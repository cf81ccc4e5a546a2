"""PDF parsing in worker processes that die with their parent.

Workers are forked (``spawn`` would re-run an unguarded calling script in every
worker) and first close the descriptors they must not keep, in particular the
index's writer lock: an flock is held while any copy of its descriptor is open.
Each then asks the kernel to kill it when its parent dies (``PR_SET_PDEATHSIG``
on Linux) and watches its parent's pid as a portable fallback: a ``kill -9`` of
``trident index`` leaves no orphan parser behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING

from trident_local.docs.model import Document
from trident_local.errors import IngestError, TridentError

if TYPE_CHECKING:
    from trident_local.docs.ingest import IngestControl

PR_SET_PDEATHSIG = 1
WATCH_SECONDS = 0.5


def parse_pdf(path: str, doc_id: str, ocr_profile: str, control: IngestControl | None = None) -> Document:
    """Ingest one PDF (in a worker or inline); an OCR profile that cannot be built means no OCR."""
    from trident_local.docs.ingest import ingest_pdf

    try:
        ocr = _worker_models().get("ocr", ocr_profile)
    except TridentError:
        ocr = None
    return ingest_pdf(path, ocr=ocr, doc_id=doc_id, control=control)


@functools.cache
def _worker_models():
    """This process's own runtime: models do not cross processes, so each parse worker builds its OCR once."""
    from trident_local.models.runtime import Models

    return Models()


def _watch_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(WATCH_SECONDS)


def start_worker(parent: int, close_fds: Sequence[int]) -> None:
    """Worker initializer: keep the inherited heap out of the garbage collector, drop the inherited
    ``close_fds``, exit as soon as ``parent`` is gone.

    A forked worker inherits the parent's objects, among them native ones whose threads it does not
    inherit (the OpenVINO embedder's compiled model): a collection that destroyed one would wait
    forever for its threads (seen: a parse worker hung in ``CPUStreamsExecutor``'s destructor).
    ``gc.freeze()`` moves everything inherited to the permanent generation; the worker never uses it."""
    gc.freeze()
    for fd in close_fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # else the watchdog below still ends the worker
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


class ParserProcesses:
    """Parse PDFs ahead of the caller in ``workers`` processes; ``workers <= 1`` parses inline.

    Use as a context manager; ``queue`` the files in the order they will be
    asked for, then ``result`` each. A worker that crashes (e.g. a MuPDF
    segfault) fails only its own file: that file is retried alone to find the
    culprit, the rest are queued again.
    """

    def __init__(self, workers: int, ocr: str, *, close_fds: Sequence[int] = (),
                 control: IngestControl | None = None):
        self.workers = workers
        self.ocr = ocr
        self.control = control  # callbacks do not cross processes: used for files parsed inline
        self.close_fds = tuple(close_fds)  # descriptors the workers must not hold (the writer lock)
        self._executor: ProcessPoolExecutor | None = None
        self._futures: dict[str, Future] = {}
        self._queued: list[tuple[Path, str]] = []

    def _new_executor(self, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=start_worker, initargs=(os.getpid(), self.close_fds))

    def __enter__(self) -> ParserProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def queue(self, files: Sequence[tuple[Path, str]]) -> None:
        """Start parsing ``(path, doc_id)`` pairs in the background (when there are workers and work)."""
        self._queued = list(files)
        if self.workers > 1 and len(self._queued) > 1:
            self._executor = self._new_executor(self.workers)
            self._submit(self._queued)

    def _submit(self, files: Sequence[tuple[Path, str]]) -> None:
        for path, doc_id in files:
            self._futures[doc_id] = self._executor.submit(parse_pdf, str(path), doc_id, self.ocr)

    def result(self, path: Path, doc_id: str) -> Document:
        """The parsed document (waits for its worker, or parses inline when it was not queued)."""
        fut = self._futures.pop(doc_id, None)
        if fut is None:
            return parse_pdf(str(path), doc_id, self.ocr, self.control)
        try:
            return fut.result()
        except BrokenProcessPool:
            return self._retry_alone(path, doc_id)

    def _retry_alone(self, path: Path, doc_id: str) -> Document:
        self.close()
        rest = [(p, d) for p, d in self._queued if d in self._futures]
        self._futures.clear()
        single = self._new_executor(1)
        try:
            return single.submit(parse_pdf, str(path), doc_id, self.ocr).result()
        except BrokenProcessPool:
            raise IngestError(str(path), "the PDF parser crashed on this file") from None
        finally:
            single.shutdown(wait=False, cancel_futures=True)
            if rest:
                self._executor = self._new_executor(self.workers)
                self._submit(rest)
