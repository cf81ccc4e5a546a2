"""Errors a user can act on; each message says what to do."""

from __future__ import annotations


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


class ModelNotFoundError(TridentError):
    """A model profile names weights that are not on disk."""


class ModelOutputError(TridentError):
    """A model returned output that could not be parsed even after safe repair."""
