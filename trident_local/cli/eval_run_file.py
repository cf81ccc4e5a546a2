"""`--run FILE` and `--fresh` of `trident eval qa|retrieval`: the resumable run file, its settings,
a line saying how many questions an earlier run already answered, and the run with its progress bar."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import typer
from rich.progress import Progress

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


def run_resumable(path: Path | None, settings: dict[str, Any], row_type: type[R], *, fresh: bool,
                  records: Sequence[Any], label: str, run: Callable[..., Any]) -> Any:
    """``run(done=, on_rows=, on_step=)``'s report over ``records``, under a progress bar: the rows the
    --run file already holds are ``done``, each new row is appended, and the file is finished with
    the report's rows (without --run, ``done`` and ``on_rows`` are None)."""
    rows = open_run(path, settings, row_type, fresh=fresh)
    with rows or nullcontext(), Progress(console=err_console, transient=True) as progress:
        task = progress.add_task(label, total=len(records), completed=report_reused(rows, records))
        report = run(done=rows.rows if rows else None, on_rows=rows.append if rows else None,
                     on_step=lambda: progress.advance(task))
        if rows:
            rows.finish(report.rows)
    return report


def skipped_and_resumed(benchmark: Any, report: Any) -> dict[str, Any]:
    """The summary's counts of questions resumed from the --run file and of records the dataset
    adapter skipped (bad page numbers, documents not in the index)."""
    return {
        "resumed": report.resumed,
        "skipped_bad_pages": len(benchmark.bad_pages),
        "skipped_missing_docs": sum(benchmark.missing_docs.values()),
    }
