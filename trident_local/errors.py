"""Errors a user can act on; each message says what to do."""

from __future__ import annotations

import errno


class TridentError(Exception):
    """Base class: messages are shown to the user as one line, without a traceback."""


class IngestError(TridentError):
    """A file could not be read as a PDF (corrupt, encrypted, empty, not a PDF)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self):  # picklable: raised in ingestion worker processes
        return (IngestError, (self.path, self.reason))


class IndexError_(TridentError):
    """The index directory is missing, of another schema version, or inconsistent."""


class WriterBusy(TridentError):
    """Another process (or another writer in this one) holds the index's writer lock."""


class StorageFull(TridentError):
    """A volume ran out of space (ENOSPC, or a disk quota): what ran out, where, and that rerunning
    resumes. Every write is atomic, so what was written before is whole and the index searchable."""

    ERRNOS = (errno.ENOSPC, errno.EDQUOT)

    def __init__(self, where: str, doing: str = "writing the index",
                 then: str = "run the same command again: it resumes where it stopped"):
        super().__init__(f"no space left on the device holding {where} (while {doing}); free space there and {then}")
        self.where = where

    @classmethod
    def caused(cls, e: BaseException) -> bool:
        """Whether ``e`` is an out-of-space error."""
        return isinstance(e, OSError) and e.errno in cls.ERRNOS


class ModelNotFoundError(TridentError):
    """A model profile names weights that are not on disk."""


class ModelOutputError(TridentError):
    """A model returned output that could not be parsed even after safe repair."""
