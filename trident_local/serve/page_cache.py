"""The page images the service keeps: a disk quota per index, least recently used out first.

``GET .../pages/{n}.png`` renders a page once and keeps the PNG under ``docs/<id>/pages/``; without a
bound, read requests over a large PDF (or one page image repeated on 20,000 pages) fill the index
volume, and then manifest, job and key writes fail. The quota counts every kept image of the index
(those found at start included); past it the least recently served ones are deleted, and a later
request renders them again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

MB = 1024**2


class PageCache:
    """Kept page images of one index, in least-recently-used order, within ``quota()`` bytes."""

    def __init__(self, root: Path, quota: Callable[[], int]):
        self.root, self.quota = root, quota
        self._lock = threading.Lock()
        self._files: OrderedDict[Path, int] = OrderedDict()
        self.total = 0
        found = []
        for p in (root / "docs").glob("*/pages/*.png"):
            try:
                st = p.stat()
            except OSError:
                continue
            found.append((st.st_atime, p, st.st_size))
        for _, p, size in sorted(found):
            self._files[p] = size
            self.total += size

    def hit(self, path: Path) -> bool:
        """Whether ``path`` is kept; a hit makes it the most recently used."""
        with self._lock:
            if path in self._files and path.exists():
                self._files.move_to_end(path)
                return True
            if path in self._files:
                self.total -= self._files.pop(path)
        return path.exists() and self.add(path)

    def add(self, path: Path) -> bool:
        """Count a newly kept image, then delete the least recently used ones past the quota."""
        try:
            size = path.stat().st_size
        except OSError:
            return False
        with self._lock:
            self.total += size - self._files.pop(path, 0)
            self._files[path] = size
            limit = self.quota()
            while self.total > limit and len(self._files) > 1:
                old, n = self._files.popitem(last=False)
                if old == path:  # the one being served stays
                    self._files[old] = n
                    continue
                old.unlink(missing_ok=True)
                self.total -= n
        return True

    def forget(self, doc_id: str) -> None:
        """Stop counting a removed document's images."""
        d = self.root / "docs" / doc_id
        with self._lock:
            for p in [p for p in self._files if p.is_relative_to(d)]:
                self.total -= self._files.pop(p)
