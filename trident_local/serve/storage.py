"""The service's files on disk: private modes, and a full volume said as such.

Every file the service writes is 0600 and every folder 0700: :func:`make_private` sets the
process umask (so third-party writers, such as the BM25 library, inherit it) and fixes what an
older version or another tool left readable. A volume out of space is :class:`StorageFull`: the
API answers 507 with ``Retry-After`` for uploads and jobs, rather than a 500 or a half-written file.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
MIN_FREE_BYTES = 8 * 1024**2  # below this an upload or a job is refused before it starts writing


class StorageFull(OSError):
    """The index volume has no space left: a 507 that says where and that a retry resumes."""

    def __init__(self, where: str):
        super().__init__(errno.ENOSPC, f"the index volume is full ({where}): free space on the server and retry")


def is_full(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in FULL_ERRNOS


def check_space(root: Path, need: int = 0, where: str = "") -> None:
    """Raise :class:`StorageFull` when ``root``'s volume has less than ``need`` (+ a margin) free."""
    try:
        free = shutil.disk_usage(root).free
    except OSError:
        return
    if free < need + MIN_FREE_BYTES:
        raise StorageFull(where or f"{free // 1024**2} MB free")


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
