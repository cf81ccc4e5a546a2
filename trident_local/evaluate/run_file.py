"""The resumable ``--run FILE`` of `trident eval qa|retrieval`: one JSON line per finished question.

A long evaluation should lose nothing when it is stopped (Ctrl-C, kill -9, a crash): each row is
appended, flushed and fsynced as soon as its question is done, and a re-run of the same command
reuses those rows and answers only the rest. Only whole lines count; a line torn by a kill is
dropped on open. ``FILE.settings.json`` (written atomically) holds everything that changes the
rows, so rows of other settings are never mixed in: such a re-run is refused unless it starts over
(``fresh``). When the run ends the file is rewritten in question order, as one run would write it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from trident_local.atomic import atomic_write_json, atomic_write_text, read_json
from trident_local.errors import TridentError

SETTINGS_SUFFIX = ".settings.json"


class Row(Protocol):
    qid: int


R = TypeVar("R", bound=Row)


def settings_path(path: Path) -> Path:
    return path.with_name(path.name + SETTINGS_SUFFIX)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def index_identity(store: Any) -> str:
    """A hash of what answers from the index depend on: its creation, config, and each document
    with its finished stages (annotating or re-adding one changes it). Not the pools: a run may
    build them lazily, from exactly these."""
    m = store.manifest
    docs = sorted((d.doc_id, d.n_pages, d.added, sorted(d.stages.items())) for d in m.documents.values())
    data = [m.schema_version, m.created, m.config.to_dict(), docs]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def profile_identity(profile: Any) -> str:
    """A chat profile's name and a hash of its settings (an edited profile file gives other
    answers); a name that is no profile file (no-model, a provided model) stays a name."""
    from trident_local.models.profiles import ModelProfile, load_profile
    from trident_local.models.runtime import is_no_model

    if is_no_model(profile):
        return "none"
    if not isinstance(profile, ModelProfile):
        try:
            profile = load_profile(str(profile))
        except TridentError:
            return str(profile)
    data = {k: v for k, v in asdict(profile).items() if k not in ("source", "origin")}
    return f"{profile.name}@{hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]}"


def row_to_json(row: Any) -> str:
    return json.dumps(asdict(row), ensure_ascii=False)


def row_from_dict(row_type: type[R], data: dict[str, Any]) -> R:
    """The row ``data`` was written from (unknown keys refused: another version's rows)."""
    unknown = set(data) - {f.name for f in fields(row_type)}  # type: ignore[arg-type]
    if unknown:
        raise TypeError(f"unknown keys {sorted(unknown)}")
    return row_type(**data)


def changed_settings(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """One phrase per setting that differs: ``pool ('rrf' -> 'bm25')``; hashes just 'differs'."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        long = any(isinstance(v, str) and len(v) >= 40 for v in (a, b))
        out.append(f"{key} differs" if long else f"{key} ({a!r} -> {b!r})")
    return out


def pending(records: Sequence[Any], done: Mapping[int, Any]) -> list[Any]:
    """The records whose rows are not in ``done`` (by qid), in order."""
    return [r for r in records if r.qid not in done]


def in_order(records: Sequence[Any], done: Mapping[int, R], new: Iterable[R]) -> list[R]:
    """The row of every record, reused or new, in the records' order."""
    by_qid = {**done, **{row.qid: row for row in new}}
    return [by_qid[r.qid] for r in records]


@dataclass
class RunFile(Generic[R]):
    """An open run file, locked against a second run on it; ``rows``: those read back, by qid."""

    path: Path
    row_type: type[R]
    fd: int
    rows: dict[int, R] = field(default_factory=dict)

    @classmethod
    def open(
        cls, path: Path, settings: dict[str, Any], row_type: type[R], *, fresh: bool = False
    ) -> RunFile[R]:
        """Open ``path`` for appending: its rows reused when written with ``settings``, else a
        clear error (``fresh``: truncate it and start over)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise TridentError(f"{path} is in use by another evaluation run") from None
            run = cls(path, row_type, fd)
            data = b"" if fresh else _read_all(fd)
            good = data.rfind(b"\n") + 1  # a line without its newline was torn by a kill: dropped
            if data[:good].strip():
                _check_settings(path, settings)
                run.rows = _parse_rows(data[:good], path, row_type)
            os.ftruncate(fd, good)  # fresh: everything; else a torn last line
            os.fsync(fd)
            atomic_write_json(settings_path(path), settings)
            os.lseek(fd, 0, os.SEEK_END)
            return run
        except BaseException:
            os.close(fd)
            raise

    def append(self, rows: Iterable[R]) -> None:
        """Write ``rows`` at the end and fsync: once this returns they survive a kill."""
        data = "".join(row_to_json(r) + "\n" for r in rows).encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        os.fsync(self.fd)

    def finish(self, rows: Sequence[R]) -> None:
        """Replace the file by ``rows`` (the whole run, in question order), atomically."""
        atomic_write_text(self.path, "".join(row_to_json(r) + "\n" for r in rows))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> RunFile[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_rows(data: bytes, path: Path, row_type: type[R]) -> dict[int, R]:
    """The rows of whole lines, by qid; a line that does not parse is an error."""
    rows: dict[int, R] = {}
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = row_from_dict(row_type, json.loads(line))
        except (ValueError, TypeError) as e:
            raise TridentError(
                f"{path}, line {n}: not a row of this evaluation ({e}); "
                "pass --fresh to start over, or another --run file"
            ) from None
        rows[row.qid] = row
    return rows


def _check_settings(path: Path, settings: dict[str, Any]) -> None:
    sp = settings_path(path)
    if not sp.exists():
        raise TridentError(
            f"{path} holds rows but no {sp.name}, so the settings it was run with are unknown; "
            "pass --fresh to start over, or another --run file"
        )
    changed = changed_settings(read_json(sp), json.loads(json.dumps(settings)))
    if changed:
        raise TridentError(
            f"{path} holds rows of other settings: {'; '.join(changed)}; "
            "pass --fresh to start over with these, or another --run file"
        )
