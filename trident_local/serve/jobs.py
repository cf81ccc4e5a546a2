"""Background jobs (indexing, annotation): a table persisted in each index directory, one worker thread.

``INDEX/jobs.json`` is rewritten atomically after every finished file, so a restart
(or kill -9) finds each job as it was after its last finished file; jobs that were
queued or running go back to the queue and skip the files already done. The
library's per-document stages make a half-indexed file resume where it stopped.

Jobs take turns a file at a time, so one user's 300-file upload does not hold back
another's single file; a runner sees ``job.cancel_requested`` and may stop inside a file.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from trident_local.atomic import atomic_write_json, read_json

log = logging.getLogger("trident_local.serve.jobs")

JOBS_FILE = "jobs.json"
ACTIVE = ("queued", "running")
KINDS = ("index", "annotate")


@dataclass
class JobFile:
    name: str  # display name
    path: str = ""  # index jobs: the stored upload
    doc_id: str = ""
    pages: int = 0
    status: str = "pending"  # pending | done | skipped | failed | cancelled
    error: str = ""
    pages_read: int = 0  # of the file being indexed: progress inside a long file


@dataclass
class Job:
    job_id: str
    index: str
    kind: str  # index | annotate
    files: list[JobFile]
    state: str = "queued"  # queued | running | done | failed | cancelled
    created: float = 0.0
    started: float | None = None
    finished: float | None = None
    pages_done: int = 0
    run_pages: int = 0  # pages done since the job (re)started: for pages/s
    run_started: float | None = None
    cancel_requested: bool = False
    resumed: int = 0  # restarts survived
    error: str = ""

    @property
    def pages_total(self) -> int:
        return sum(f.pages for f in self.files)

    def progress(self) -> dict[str, Any]:
        reading = sum(f.pages_read for f in self.files if f.status == "pending")  # inside the current file
        rate = 0.0
        if self.run_started and (self.run_pages or reading):
            rate = (self.run_pages + reading) / max(time.time() - self.run_started, 1e-6)
        done = self.pages_done + reading
        left = self.pages_total - done
        return {
            "files_done": sum(f.status != "pending" for f in self.files),
            "files_total": len(self.files),
            "pages_done": done,
            "pages_total": self.pages_total,
            "pages_per_s": round(rate, 3),
            "eta_s": round(left / rate, 1) if rate > 0 and self.state in ACTIVE else None,
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["progress"] = self.progress()
        return d

    def public(self) -> dict[str, Any]:
        """:meth:`to_dict` as the API shows it: files by name, never by server path."""
        d = self.to_dict()
        for f in d["files"]:
            f.pop("path", None)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Job:
        d = {k: v for k, v in d.items() if k != "progress"}
        return cls(**{**d, "files": [JobFile(**f) for f in d["files"]]})


Runner = Callable[[Job, JobFile], None]  # does one file: sets its status/pages/error


class JobManager:
    """Owns every index's job table and runs queued jobs one file at a time in one thread."""

    def __init__(self, index_dirs: dict[str, Path], runners: dict[str, Runner], *, pause_s: float = 0.0,
                 on_change: Callable[[Job], None] | None = None,
                 on_finish: Callable[[Job], None] | None = None):
        self.index_dirs = dict(index_dirs)
        self.runners = runners
        self.pause_s = pause_s
        self.on_change = on_change
        self.on_finish = on_finish  # a job ended (done, failed, cancelled): e.g. drop its unindexed uploads
        self.jobs: dict[str, Job] = {}
        self._lock = threading.RLock()
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._current: str | None = None  # the job whose file the worker is running
        for name, d in self.index_dirs.items():
            self._load(name, d)

    @property
    def lock(self) -> threading.RLock:
        """The job table's lock: held, no job ends (and drops its files) and none is added."""
        return self._lock

    def add_index(self, name: str, path: Path) -> None:
        with self._lock:
            self.index_dirs[name] = path
            self._load(name, path)

    def _load(self, name: str, d: Path) -> None:
        p = d / JOBS_FILE
        if not p.exists():
            return
        try:
            rows = read_json(p).get("jobs", [])
        except ValueError:
            log.error("%s is not valid JSON; starting with an empty job table", p)
            return
        for row in rows:
            job = Job.from_dict(row)
            job.index = name
            if job.state in ACTIVE:
                job.state = "queued"
                job.resumed += 1
                job.run_pages, job.run_started = 0, None
            self.jobs[job.job_id] = job

    def _save(self, index: str) -> None:
        rows = [j.to_dict() for j in self.jobs.values() if j.index == index]
        atomic_write_json(self.index_dirs[index] / JOBS_FILE, {"jobs": rows})

    # -- API ------------------------------------------------------------------------------------------
    def submit(self, index: str, kind: str, files: list[JobFile]) -> Job:
        job = Job(uuid.uuid4().hex[:12], index, kind, files, created=time.time())
        with self._lock:
            self.jobs[job.job_id] = job
            try:
                self._save(index)
            except BaseException:  # not on disk (a full volume): not in memory either
                del self.jobs[job.job_id]
                raise
        self._queue.put(job.job_id)
        self._changed(job)
        return job

    def active_doc_ids(self, index: str) -> set[str]:
        """doc_ids that a queued or running job of ``index`` has still to do (a job asked to cancel has
        nothing left to do: the same file uploaded again meanwhile is stored and indexed by a new job)."""
        with self._lock:
            return {f.doc_id for j in self.jobs.values() if j.index == index and j.state in ACTIVE
                    and not j.cancel_requested for f in j.files if f.status == "pending" and f.doc_id}

    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def list(self, index: str | None = None) -> list[Job]:
        return sorted((j for j in self.jobs.values() if index is None or j.index == index),
                      key=lambda j: j.created)

    def cancel(self, job_id: str) -> Job | None:
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None:
                return None
            if job.state == "queued":
                self._finish(job, "cancelled")
            elif job.state == "running" and job_id != self._current:  # waiting for its next turn
                job.cancel_requested = True
                self._finish(job, "cancelled")
            elif job.state == "running":
                job.cancel_requested = True  # the runner stops at its next page, the worker before the next file
                self._save(job.index)
        return job

    # -- worker ---------------------------------------------------------------------------------------
    def start(self) -> None:
        for job in self.list():
            if job.state == "queued":
                self._queue.put(job.job_id)
        self._thread = threading.Thread(target=self._work, name="trident-jobs", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the current file (a checkpoint), leave the rest queued for the next start."""
        self._stopping.set()
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def _work(self) -> None:
        while not self._stopping.is_set():
            job_id = self._queue.get()
            if job_id is None:
                break
            job = self.jobs.get(job_id)
            if job is None or job.state not in ACTIVE:
                continue
            # one file, then the job waits its turn behind the others (or goes on when it is alone)
            while self._run_one(job) and self._queue.empty() and not self._stopping.is_set():
                pass
            if job.state in ACTIVE and not self._stopping.is_set():
                self._queue.put(job.job_id)

    def _run_one(self, job: Job) -> bool:
        """Run the job's next pending file; True while the job has more to do."""
        with self._lock:
            if job.state not in ACTIVE:  # cancelled while it waited for its turn
                return False
            self._current = job.job_id  # from here a cancel asks the runner to stop
            if job.state == "queued":
                job.state = "running"
                job.started = job.started or time.time()
                job.run_started, job.run_pages = time.time(), 0
                self._save(job.index)
        self._changed(job)
        f = next((f for f in job.files if f.status == "pending"), None)
        if f is None or job.cancel_requested:
            self._current = None
            self._end(job)
            return False
        if self._stopping.is_set():
            with self._lock:
                self._current = None
                job.state = "queued"  # resumes at the next start
                self._save(job.index)
            return False
        try:
            self.runners[job.kind](job, f)
        except Exception as e:  # a configuration problem: stop the job, say why
            log.exception("job %s failed on %s", job.job_id, f.name)
            with self._lock:
                f.status, f.error = "failed", f"{type(e).__name__}: {e}"
                job.error = f.error
                self._finish(job, "failed")
            return False
        finally:
            self._current = None
        with self._lock:
            if f.status in ("done", "skipped"):
                job.pages_done += f.pages
                job.run_pages += f.pages
            self._save(job.index)
        self._changed(job)
        if self.pause_s:
            self._stopping.wait(self.pause_s)
        if job.cancel_requested or all(x.status != "pending" for x in job.files):
            self._end(job)
            return False
        return True

    def _end(self, job: Job) -> None:
        with self._lock:
            if job.cancel_requested:
                self._finish(job, "cancelled")
            else:
                failed = [f for f in job.files if f.status == "failed"]
                if failed and len(failed) == len(job.files):
                    job.error = failed[0].error
                self._finish(job, "failed" if failed and len(failed) == len(job.files) else "done")

    def _finish(self, job: Job, state: str) -> None:
        for f in job.files:
            if f.status == "pending":
                f.status = "cancelled"
        if self.on_finish:  # clean up before the end is published: whoever sees it sees the clean state
            try:
                self.on_finish(job)
            except Exception:  # clean-up must not take the worker down
                log.exception("clean-up after job %s failed", job.job_id)
        job.state, job.finished = state, time.time()
        self._save(job.index)
        self._changed(job)

    def _changed(self, job: Job) -> None:
        if self.on_change:
            self.on_change(job)
