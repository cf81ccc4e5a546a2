"""`trident eval retrieval`: page-level retrieval metrics on an MMLongBench-Doc style dataset, of the
pages `trident search` returns at the same options."""

from __future__ import annotations

from pathlib import Path

import typer

from trident_local.cli.common import (
    cli_command,
    err_console,
    json_option,
    load_benchmark,
    print_summary,
    write_json,
)
from trident_local.cli.eval_options import (
    ADAPTER,
    DATASET,
    FINDERS,
    INDEX,
    POOL,
    RAY,
    WORKERS,
    DatasetAdapter,
)
from trident_local.cli.eval_run_file import (
    FRESH,
    base_settings,
    run_option,
    run_resumable,
    skipped_and_resumed,
)


@cli_command
def retrieval(
    index_dir: Path = INDEX,
    dataset: Path = DATASET,
    adapter: DatasetAdapter = ADAPTER,
    pool: str = POOL,
    finders: str = FINDERS,
    k: int = typer.Option(5, min=1, help="K for Recall/Precision/F1/nDCG@K."),
    pool_depth: int = typer.Option(20, min=1, help="M: candidate pool size (Recall@M)."),
    rerank: str = typer.Option(
        "none", help="none (the search's top-K, as `trident search` shows) | annotated (records + adaptive K <= --k)."
    ),
    fields: str = typer.Option(
        "full",
        help="Record fields for --rerank annotated: full | caption-only | "
        "drop-caption | drop-concepts | drop-entities | snippet-only.",
    ),
    profile: str = typer.Option(
        None,
        help="Chat profile for the xkg route and --rerank annotated (default: "
        "the index's; 'none' = rule route, no-model fused-match reranker).",
    ),
    limit: int = typer.Option(None, help="Only the first N answerable questions (quick checks)."),
    json_out: str = json_option("the summary"),
    run_out: Path = run_option("per-question rankings"),
    fresh: bool = FRESH,
    ray: str = RAY,
    workers: int = WORKERS,
) -> None:
    """Recall@K, Precision@K, F1@K, MRR, nDCG@K and Recall@M over the answerable questions, of the pages
    `trident search` ranks with the same --pool and --finders (`--finders none`: the pool alone).

    With --ray the questions run in shards on Ray actors that read the index (each with its own
    models); the rows, the --run file and the summary are those of a run without it.

    With --run FILE an interrupted run is resumed by the same command: the questions already in
    FILE are not run again, and the summary is that of one uninterrupted run.
    """
    from trident_local.evaluate.retrieval_run import (
        RunRow,
        annotated_reranker,
        answerable,
        run_retrieval,
        run_retrieval_on_ray,
    )
    from trident_local.index import Index
    from trident_local.search import parse_finders

    idx = Index.open(index_dir)
    finders = ",".join(parse_finders(finders)) or "none"
    rep = load_benchmark(idx.store, dataset, adapter.value)
    records = answerable(rep.records)
    if limit:
        records = records[:limit]
    reranker = None
    if rerank not in ("none", "annotated"):
        err_console.print(f"[red]error:[/red] --rerank must be none or annotated, not {rerank!r}")
        raise typer.Exit(2)
    if profile is not None:  # this run's chat model, for the pool's route and the reranker
        idx.models.use_profile("chat", profile)
    if rerank == "annotated":
        from trident_local.rerank import FIELD_SETS

        if fields not in FIELD_SETS:
            err_console.print(f"[red]error:[/red] --fields must be one of {', '.join(FIELD_SETS)}")
            raise typer.Exit(2)
        if not ray:
            reranker = annotated_reranker(idx, fields=fields, k=k)
    settings = {
        **base_settings("eval retrieval", idx, dataset, adapter.value),
        "pool": pool,
        "finders": finders,
        "k": k,
        "pool_depth": pool_depth,
        "rerank": rerank,
        "fields": fields if rerank == "annotated" else None,
        "limit": limit,
    }

    def run(**resume):
        if ray:
            return run_retrieval_on_ray(idx, records, pool=pool, k=k, pool_depth=pool_depth,
                                        finders=finders, fields=fields if rerank == "annotated" else None,
                                        address=ray, workers=workers, **resume)
        return run_retrieval(idx, records, pool=pool, k=k, pool_depth=pool_depth, finders=finders,
                             rerank=reranker, **resume)

    report = run_resumable(run_out, settings, RunRow, fresh=fresh, records=records, label=f"{pool}", run=run)
    s = report.summary
    title = f"{pool}" + (f" + annotated rerank ({fields})" if rerank == "annotated" else "")
    print_summary(json_out, f"{title} on {dataset.name}: {s['n']} answerable questions", s)
    extra = {"rerank": rerank}
    if rerank == "annotated":
        extra.update(fields=fields, rerank_fallbacks=report.fallbacks)
    write_json(
        json_out,
        {
            "pool": pool,
            "finders": finders,
            "k": k,
            "dataset": str(dataset),
            **s,
            **extra,
            **skipped_and_resumed(rep, report),
        },
    )


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    eval_app.command("retrieval")(retrieval)
