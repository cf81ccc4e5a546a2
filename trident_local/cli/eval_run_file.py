"""`--run FILE` and `--fresh` of `trident eval qa|retrieval`: the resumable run file, its settings,
and a line saying how many questions an earlier run already answered."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from trident_local.cli.common import err_console
from trident_local.errors import TridentError
from trident_local.evaluate.run_file import R, RunFile, file_sha256, index_identity, profile_identity

FRESH = typer.Option(
    False, "--fresh", help="Empty the --run file and start over (needed when its settings differ)."
)


def run_option(what: str) -> Any:
    return typer.Option(
        None,
        "--run",
        metavar="FILE",
        help=f"Write {what} as JSONL, each row as soon as its question is done. Resumable: the same "
        "command again skips the questions already in FILE (FILE.settings.json says what they "
        "were run with; other settings are refused unless --fresh).",
    )


def base_settings(command: str, index: Any, dataset: Path, adapter: str) -> dict[str, Any]:
    """The settings both commands' rows depend on: code version, dataset, index, chat profile."""
    from trident_local import __version__

    return {
        "command": command,
        "version": __version__,
        "dataset": str(Path(dataset).resolve()),
        "dataset_sha256": file_sha256(dataset),
        "adapter": adapter,
        "index": str(index.store.root.resolve()),
        "index_identity": index_identity(index.store),
        "profile": profile_identity(index.models.profile("chat")),
    }


def open_run(
    path: Path | None, settings: dict[str, Any], row_type: type[R], *, fresh: bool
) -> RunFile[R] | None:
    """The open run file (None without --run)."""
    if path is None:
        if fresh:
            raise TridentError("--fresh starts a --run file over; give one with --run FILE")
        return None
    return RunFile.open(path, settings, row_type, fresh=fresh)


def report_reused(run: RunFile | None, records: Sequence[Any]) -> int:
    """How many of ``records`` the run file already holds; said on stderr when any."""
    n = sum(r.qid in run.rows for r in records) if run else 0
    if run and n:
        err_console.print(
            f"resuming {run.path}: {n} of {len(records)} questions already done, "
            f"{len(records) - n} to go",
            highlight=False,
        )
    return n
