"""`trident eval qa`: MMLongBench-Doc generalized accuracy and F1 of the Trident answer path."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from trident_local.cli.common import (
    cli_command,
    console,
    json_option,
    load_benchmark,
    write_json,
)
from trident_local.cli.eval_options import (
    ADAPTER,
    ASK,
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
from trident_local.models.runtime import runtime_report


@cli_command
def qa(
    index_dir: Path = INDEX,
    dataset: Path = DATASET,
    adapter: DatasetAdapter = ADAPTER,
    pool: str = POOL,
    finders: str = FINDERS,
    rerank: str = typer.Option(ASK.rerank, help="Reranker, as `trident ask --rerank` (auto | none | annotated | ...)."),
    fields: str = typer.Option(ASK.fields, help="Record fields for rerank (see `trident ask --help`)."),
    answer: str = typer.Option(ASK.answer, help="Answer strategy, as `trident ask --answer` (auto | plain | lenses | ...)."),
    profile: str = typer.Option(None, help="Chat/VLM profile (default: the index's; 'none' = extractive)."),
    limit: int = typer.Option(None, help="Only the first N questions (quick checks)."),
    json_out: str = json_option("the summary"),
    run_out: Path = run_option("per-question predictions and scores"),
    fresh: bool = FRESH,
    split_file: Path = typer.Option(None, help="Document split JSON (benchmarks/make_doc_split.py)."),
    split: str = typer.Option("test", help="Which split of --split-file to run (calib | test)."),
    verify: bool = typer.Option(
        ASK.verify, "--verify/--no-verify", help="Self-check every answer (its cost is timed)."
    ),
    ray: str = RAY,
    workers: int = WORKERS,
) -> None:
    """Accuracy (mean score) and F1 over all questions, unanswerable ones included, with breakdowns.
    The answers are those of `trident ask` with the same options, and the defaults are ask's.

    With --ray the questions run in shards on Ray actors that read the index (each with its own
    models); the rows, the --run file and the summary are those of a run without it.

    With --run FILE an interrupted run is resumed by the same command: the questions already in
    FILE are not answered again, and the summary is that of one uninterrupted run.
    """
    from trident_local.evaluate.qa_run import QARow, run_qa
    from trident_local.evaluate.run_file import file_sha256
    from trident_local.generate.ask import AskOptions
    from trident_local.index import Index

    idx = Index.open(index_dir)
    options = AskOptions(pool=pool, rerank=rerank, fields=fields, answer=answer, verify=verify, finders=finders)
    rep = load_benchmark(idx.store, dataset, adapter.value)
    records = rep.records
    if split_file is not None:
        from trident_local.evaluate.doc_split import in_split, split_docs

        records = in_split(records, split_docs(split_file, split))
    records = records[:limit] if limit else records
    if profile is not None:
        idx.models.use_profile("chat", profile)
    chat_name = idx.models.profile_name("chat")
    has_chat = idx.models.has("chat")  # built where the questions run (here, or on the Ray workers)
    settings = {
        **base_settings("eval qa", idx, dataset, adapter.value),
        "pool": pool,
        "finders": finders,
        "rerank": rerank,
        "fields": fields,
        "answer": answer,
        "verify": verify,
        "limit": limit,
        "split_file": str(split_file.resolve()) if split_file is not None else None,
        "split_file_sha256": file_sha256(split_file) if split_file is not None else None,
        "split": split if split_file is not None else None,
    }
    report = run_resumable(run_out, settings, QARow, fresh=fresh, records=records, label="qa",
                           run=lambda **resume: run_qa(idx, records, options, ray=ray, workers=workers, **resume))
    s = report.summary
    table = Table(
        title=f"QA on {dataset.name}: {s['n']} questions ({pool}, rerank {rerank}, answer "
        f"{answer if has_chat else 'evidence-first'})"
    )
    for col in ("accuracy", "f1", "mean K", *[f"acc {k}" for k in s["per_format"]]):
        table.add_column(col, justify="right")
    table.add_row(
        f"{s['accuracy']:.3f}",
        f"{s['f1']:.3f}",
        f"{s['mean_k']:.2f}",
        *[f"{v['accuracy']:.3f} ({v['n']})" for v in s["per_format"].values()],
    )
    console.print(table)
    u = s["unanswerable"]
    console.print(
        "unanswerable: precision "
        + ("-" if u["precision"] is None else f"{u['precision']:.3f}")
        + ", recall "
        + ("-" if u["recall"] is None else f"{u['recall']:.3f}")
        + f" ({u['predicted']} predicted, {u['gold']} gold); self-check {s['self_check']}",
        highlight=False,
    )
    console.print(f"[dim]protocol: {s['protocol']}[/dim]")
    write_json(
        json_out,
        {
            "dataset": str(dataset),
            "pool": pool,
            "rerank": rerank,
            "fields": fields,
            "answer": answer if has_chat else "evidence-first",
            "split": f"{split_file}:{split}" if split_file is not None else "all",
            "profile": chat_name,
            **s,
            **skipped_and_resumed(rep, report),
            "runtime": runtime_report()
            if not report.workers_runtime
            else {**runtime_report(), "workers": report.workers_runtime},
        },
    )


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    eval_app.command("qa")(qa)
