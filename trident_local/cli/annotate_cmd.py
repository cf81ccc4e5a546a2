"""`trident annotate`: build the per-page Trident annotation of an index (resumable per document)."""

from __future__ import annotations

from pathlib import Path

import typer

from trident_local.cli.common import cli_command, console, err_console, json_option, progress_bar, write_json
from trident_local.models.runtime import runtime_report


@cli_command
def annotate(
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory."),
    profile: str = typer.Option(
        None,
        help="Chat/VLM profile for captions, entities and concept names "
        "(default: the index's chat profile; 'none' = no-model strategies).",
    ),
    doc: list[str] = typer.Option(None, "--doc", "-d", help="Only these documents (id, file name or stem)."),
    force: bool = typer.Option(False, "--force", help="Re-annotate documents that are already annotated."),
    workers: int = typer.Option(
        2,
        min=1,
        help="With --ray: model actors (CPU actors; with a GPU chat model "
        "one per GPU instead); with --ray local also the cluster's CPUs.",
    ),
    ray: str = typer.Option(
        None,
        "--ray",
        metavar="ADDRESS",
        help="Annotate on Ray: a cluster address (ray://host:10001, auto) or 'local' "
        "(needs the \\[ray] extra). Each actor holds its own models; the index "
        "directory must be on a filesystem every node sees.",
    ),
    json_out: str = json_option("the report"),
) -> None:
    """Page records (section, visual caption, entity tags, snippet) and topic/entity/structural concepts.

    Built once per document and cached in the index; an interrupted run resumes
    with the documents not yet annotated. A document that fails is reported and
    the rest go on; the exit status is 1 if any failed.
    """
    from trident_local.annotate import STAGE, annotate_index
    from trident_local.index import Index

    idx = Index.open(index_dir)
    targets = [idx.resolve(d) for d in doc] if doc else idx.store.doc_ids()
    todo = [d for d in targets if force or not idx.store.manifest.documents[d].stages.get(STAGE)]
    total_pages = sum(idx.store.manifest.documents[d].n_pages for d in todo)
    with progress_bar() as progress:
        task = progress.add_task("annotating", total=total_pages, rate="")

        def on_doc(doc_id: str, pages: int, seconds: float) -> None:
            progress.update(
                task,
                advance=pages,
                rate=f"{pages / max(seconds, 1e-9):.1f} pages/s",
                description=idx.store.manifest.documents[doc_id].file_name[:40],
            )

        options = {"profile": profile, "force": force, "docs": targets if doc else None, "on_doc": on_doc}
        if ray is not None:
            from trident_local.scale.ray_annotate import annotate_with_ray

            rep = annotate_with_ray(idx, address=ray, workers=workers, **options)
        else:
            rep = annotate_index(idx, **options)
    if "xkg" in idx.config.pools or idx.store.manifest.pools.get("xkg"):
        idx.build_pools()
    for doc_id, err in rep.failed:
        err_console.print(
            f"[red]failed:[/red] {idx.store.manifest.documents[doc_id].file_name}: {err}", highlight=False
        )
    rate = rep.pages / rep.seconds if rep.seconds else 0.0
    console.print(
        f"annotated {len(rep.annotated)} document(s), {rep.pages} pages in {rep.seconds:.1f} s "
        f"({rate:.2f} pages/s); {len(rep.skipped)} already annotated; {len(rep.failed)} failed."
    )
    write_json(
        json_out,
        {
            "annotated": rep.annotated,
            "skipped": rep.skipped,
            "failed": rep.failed,
            "pages": rep.pages,
            "seconds": rep.seconds,
            "model_calls": rep.calls,
            "runtime": runtime_report(),
        },
    )
    if rep.failed:
        raise typer.Exit(1)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    app.command("annotate")(annotate)
