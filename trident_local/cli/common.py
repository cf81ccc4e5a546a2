"""Shared CLI helpers: one console, errors as one red line, JSON output.

JSON convention, the same for every subcommand: ``--json FILE`` writes the command's
result as JSON to FILE, ``--json -`` to stdout. While a command's JSON goes to stdout,
stdout carries nothing else: tables, progress and anything a library prints (Python
``print`` or a child process's output on file descriptor 1) go to stderr instead.
"""

from __future__ import annotations

import functools
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from trident_local.errors import TridentError

console = Console(stderr=False)
err_console = Console(stderr=True)

STDOUT = "-"
JSON_PARAM = "json_out"  # the parameter name every command gives its --json option
_pending_stdout: list[str] | None = None  # JSON held back while stdout is reserved


def to_jsonable(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def json_option(what: str = "the result") -> Any:
    """The ``--json FILE`` option; name the parameter ``json_out`` so :func:`cli_command` sees it."""
    return typer.Option(
        None,
        "--json",
        metavar="FILE",
        help=f"Write {what} as JSON to FILE ('-' = stdout; everything else then goes to stderr).",
    )


def write_json(path: str | Path | None, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` ("-" = stdout); atomically for files; nothing for None."""
    if path is None:
        return
    text = json.dumps(data, indent=2, default=to_jsonable, ensure_ascii=False) + "\n"
    if str(path) == STDOUT:
        if _pending_stdout is not None:
            _pending_stdout.append(text)  # written once stdout is given back
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
        return
    from trident_local.atomic import atomic_write_text

    atomic_write_text(Path(path), text)


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation, ValueError):
        return None


@contextmanager
def stdout_for_json_only() -> Iterator[None]:
    """Send everything written to stdout to stderr, then write the held-back JSON to stdout.

    Redirects both ``sys.stdout`` and, where stdout is a real file descriptor, fd 1
    itself, so child processes (a vLLM engine core) and C libraries are caught too.
    """
    global _pending_stdout
    real, pending = sys.stdout, []
    out_fd, err_fd = _fileno(real), _fileno(sys.stderr)
    saved_fd = None
    real.flush()
    if out_fd is not None and err_fd is not None:
        saved_fd = os.dup(out_fd)
        os.dup2(err_fd, out_fd)
    sys.stdout, _pending_stdout = sys.stderr, pending
    try:
        yield
    finally:
        sys.stdout, _pending_stdout = real, None
        real.flush()  # what was buffered on the real stdout meanwhile still goes to stderr
        sys.stderr.flush()
        if saved_fd is not None:
            os.dup2(saved_fd, out_fd)
            os.close(saved_fd)
        for text in pending:
            real.write(text)
        real.flush()


def human_console(json_out: str | Path | None) -> Console:
    """Where tables go: stderr when JSON is written to stdout, so stdout stays parseable."""
    return err_console if json_out is not None and str(json_out) == STDOUT else console


def print_summary(json_out: str | Path | None, title: str, summary: dict[str, Any]) -> None:
    """An evaluation's summary as a one-row table (counts as integers, rates to three decimals)."""
    from rich.table import Table

    table = Table(title=title)
    for key in summary:
        table.add_column(key, justify="right")
    table.add_row(*[str(v) if isinstance(v, int) else f"{v:.3f}" for v in summary.values()])
    human_console(json_out).print(table)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn TridentError into one red line and exit status 2 (no traceback)."""
    try:
        yield
    except TridentError as e:  # escaped: a message may hold brackets ("trident-local[ray]", a list)
        err_console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from None


def cli_command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a command: :func:`user_errors`, and with ``json_out == "-"`` stdout reserved for the JSON."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with user_errors():
            if str(kwargs.get(JSON_PARAM)) == STDOUT:
                with stdout_for_json_only():
                    return fn(*args, **kwargs)
            return fn(*args, **kwargs)

    return wrapper


def load_benchmark(store, dataset: Path, adapter: str = "mmlongbench"):
    """Dataset records (read by ``adapter``) resolved against the index, skipped ones reported on stderr."""
    from trident_local.evaluate.datasets import load_records
    from trident_local.evaluate.mmlongbench import resolve_records

    rep = resolve_records(load_records(dataset, adapter), store)
    for qid, doc, pages, n in rep.bad_pages:
        err_console.print(
            f"[yellow]skipped[/yellow] question {qid} ({doc}): gold pages {pages} beyond its {n} pages"
        )
    if rep.missing_docs:
        err_console.print(
            f"[yellow]skipped[/yellow] {sum(rep.missing_docs.values())} question(s) of "
            f"{len(rep.missing_docs)} document(s) not in the index"
        )
    return rep


def registry_choice(name: str, names: list[str]) -> type[Enum]:
    """An option type whose choices are a registry's names (typer checks them and lists them in --help)."""
    return Enum(name, {n: n for n in names}, type=str)  # type: ignore[return-value]


def progress_bar(rate_field: str = "{task.fields[rate]}"):
    """The bar of long commands (indexing, annotation): on stderr, with a rate and an ETA."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(rate_field),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    )
