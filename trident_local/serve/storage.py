"""The service's files on disk: private modes, and a full volume said as such.

Every file the service writes is 0600 and every folder 0700: :func:`make_private` sets the
process umask (so third-party writers, such as the BM25 library, inherit it) and fixes what an
older version or another tool left readable. A volume out of space is :class:`StorageFull`: the
API answers 507 with ``Retry-After`` for uploads and jobs, rather than a 500 or a half-written file
(a failed write leaves the key, job and manifest files as they were: every write is atomic, and the
key store and the job table change memory only after the file).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from trident_local.errors import StorageFull

FULL_ERRNOS = StorageFull.ERRNOS
MIN_FREE_BYTES = 8 * 1024**2  # below this (or 5 % of a small volume) uploads and jobs are refused
RETRY = "retry: nothing was half-written, and indexing resumes where it stopped"


def check_space(root: Path, where: str, doing: str, need: int = 0) -> None:
    """Raise :class:`StorageFull` when ``root``'s volume has less than ``need`` (+ a margin) free."""
    try:
        usage = shutil.disk_usage(root)
    except OSError:
        return
    if usage.free < need + min(MIN_FREE_BYTES, usage.total // 20):
        raise StorageFull(where, doing, RETRY)


def make_private(root: Path) -> int:
    """umask 077 for this process, then 0700 folders and 0600 files under ``root``; how many changed."""
    os.umask(0o077)
    changed = 0
    for dirpath, _, filenames in os.walk(root):
        for name in [dirpath, *(os.path.join(dirpath, f) for f in filenames)]:
            try:
                st = os.lstat(name)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode) or not stat.S_IMODE(st.st_mode) & 0o077:
                continue
            os.chmod(name, stat.S_IMODE(st.st_mode) & 0o700)  # the owner keeps what it had
            changed += 1
    return changed
