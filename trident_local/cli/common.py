"""Shared CLI helpers: one console, errors as one red line, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from trident_local.errors import TridentError

console = Console(stderr=False)
err_console = Console(stderr=True)


def to_jsonable(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def write_json(path: str | Path | None, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` ("-" = stdout); atomically for files."""
    if path is None:
        return
    text = json.dumps(data, indent=2, default=to_jsonable, ensure_ascii=False)
    if str(path) == "-":
        sys.stdout.write(text + "\n")
        return
    from trident_local.store.atomic import atomic_write_text

    atomic_write_text(Path(path), text + "\n")


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn TridentError into one red line and exit status 2 (no traceback)."""
    try:
        yield
    except TridentError as e:
        err_console.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None


def cli_command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator form of :func:`user_errors`."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with user_errors():
            return fn(*args, **kwargs)

    return wrapper


def human_console(json_out: str | Path | None) -> Console:
    """Where tables go: stderr when JSON is written to stdout, so stdout stays parseable."""
    return err_console if json_out is not None and str(json_out) == "-" else console


def load_benchmark(store, dataset: Path):
    """MMLongBench-Doc records resolved against the index, with skipped ones reported on stderr."""
    from trident_local.evaluate.mmlongbench import load_samples, resolve_records

    rep = resolve_records(load_samples(dataset), store)
    for qid, doc, pages, n in rep.bad_pages:
        err_console.print(f"[yellow]skipped[/yellow] question {qid} ({doc}): gold pages {pages} beyond its {n} pages")
    if rep.missing_docs:
        err_console.print(f"[yellow]skipped[/yellow] {sum(rep.missing_docs.values())} question(s) of "
                          f"{len(rep.missing_docs)} document(s) not in the index")
    return rep
