"""`trident index`, `trident docs`, `trident remove`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from trident_local.cli.common import (
    cli_command,
    err_console,
    human_console,
    json_option,
    progress_bar,
    write_json,
)


def _status_style(status: str) -> str:
    return {"indexed": "green", "resumed": "cyan", "skipped": "dim", "failed": "red"}.get(status, "")


@cli_command
def index(
    paths: list[Path] = typer.Argument(
        ..., help="PDF files and/or folders (searched recursively for *.pdf)."
    ),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory (created if missing)."),
    pools: str = typer.Option(
        None, help="Pools to build, comma-separated (default for a new index: bm25,dense)."
    ),
    embedder: str = typer.Option(None, help="Text embedder profile for a new index (default: minilm)."),
    ocr: str = typer.Option(None, help="OCR profile for pages without text (tesseract | none)."),
    multivector: str = typer.Option(
        None, help="Page-image embedder profile for the colpali pool (e.g. colqwen2.5)."
    ),
    annotate: bool = typer.Option(
        False, "--annotate", help="Also build the per-page Trident annotation (with --ray: on the Ray actors)."
    ),
    workers: int = typer.Option(
        2, min=1, help="Processes for PDF parsing (with --ray local: the cluster's CPUs)."
    ),
    ray: str = typer.Option(
        None,
        "--ray",
        metavar="ADDRESS",
        help="Run on Ray: a cluster address (ray://host:10001, auto) or 'local' (needs the \\[ray] extra).",
    ),
    json_out: str = json_option("the per-file report"),
) -> None:
    """Index PDFs: parse pages and evidence objects, OCR scanned pages, build retrieval pools.

    Re-running resumes: finished documents are skipped, interrupted ones redone.
    A file that cannot be read is reported and the rest of the batch goes on;
    the exit status is 1 if any file failed.
    """
    from trident_local.config import IndexOptions
    from trident_local.index import Index, expand_paths

    pool_list = [p.strip() for p in pools.split(",") if p.strip()] if pools else None
    idx = Index.for_indexing(index_dir, IndexOptions(pool_list, embedder, ocr, multivector))
    if annotate:
        from trident_local.annotate import annotation_stage

        idx.doc_stages.append(annotation_stage(idx))
    files = expand_paths(paths)
    if not files:
        err_console.print(f"[red]error:[/red] no PDF files found in {', '.join(map(str, paths))}")
        raise typer.Exit(2)
    total_pages = 0
    with progress_bar("{task.fields[pages]} pages, {task.fields[rate]}") as progress:
        task = progress.add_task("indexing", total=len(files), pages=0, rate="")

        def on_file(res) -> None:
            nonlocal total_pages
            if res.status in ("indexed", "resumed"):
                total_pages += res.pages
            elapsed = progress.tasks[0].elapsed or 1e-9
            progress.update(
                task,
                advance=1,
                pages=total_pages,
                rate=f"{total_pages / elapsed:.1f} pages/s",
                description=Path(res.path).name[:40],
            )
            if res.status == "failed":
                progress.console.print(f"[red]failed:[/red] {res.error}", highlight=False)

        if ray:
            from trident_local.scale.ray_index import add_with_ray

            report = add_with_ray(idx, files, address=ray, workers=workers, on_file=on_file)
        else:
            report = idx.add(files, workers=workers, on_file=on_file)

    table = Table(title=f"{index_dir}: {len(report.files)} file(s) in {report.seconds:.1f} s")
    for col in ("file", "status", "pages", "doc_id", "note"):
        table.add_column(col)
    for f in report.files:
        table.add_row(
            Path(f.path).name,
            f"[{_status_style(f.status)}]{f.status}",
            str(f.pages or ""),
            f.doc_id,
            f.error.split(": ", 1)[-1] if f.error else "",
        )
    out = human_console(json_out)
    out.print(table)
    rate = report.pages_indexed / report.seconds if report.seconds else 0.0
    out.print(
        f"{report.pages_indexed} pages indexed ({rate:.2f} pages/s); "
        f"{len(idx.store.doc_ids())} documents in the index; {len(report.failed)} failed."
    )
    write_json(
        json_out, {"files": report.files, "seconds": report.seconds, "pages_indexed": report.pages_indexed}
    )
    if report.failed:
        raise typer.Exit(1)


@cli_command
def docs(
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory."),
    json_out: str = json_option("the document list"),
) -> None:
    """List the documents in an index."""
    from trident_local.store.index_store import IndexStore

    store = IndexStore.open(index_dir)
    entries = store.entries()
    table = Table(title=f"{index_dir}: {len(entries)} document(s)")
    for col in ("doc_id", "file", "pages", "stages", "warnings"):
        table.add_column(col)
    for e in entries:
        stages = ",".join(s for s, ok in e.stages.items() if ok)
        table.add_row(e.doc_id, e.file_name, str(e.n_pages), stages, "; ".join(e.warnings)[:60])
    human_console(json_out).print(table)
    write_json(json_out, [e.__dict__ for e in entries])


@cli_command
def remove(
    docs_: list[str] = typer.Argument(..., metavar="DOC...", help="doc_id, file name or file stem."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory."),
) -> None:
    """Remove documents from an index (pools are rebuilt from the rest; nothing is re-parsed)."""
    from trident_local.index import Index

    idx = Index.open(index_dir)
    for d in docs_:
        human_console(None).print(f"removed {idx.remove(d)}")


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    app.command("index")(index)
    app.command("docs")(docs)
    app.command("remove")(remove)
