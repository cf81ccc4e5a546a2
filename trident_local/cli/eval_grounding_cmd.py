"""`trident eval grounding`: do the regions of search hits and answer citations cover the evidence?"""

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
from trident_local.cli.eval_options import ADAPTER, DATASET, INDEX, POOL, DatasetAdapter


@cli_command
def grounding(
    index_dir: Path = INDEX,
    dataset: Path = DATASET,
    adapter: DatasetAdapter = ADAPTER,
    pool: str = POOL,
    k: int = typer.Option(5, min=1, help="Search hits scored per question (hit@K)."),
    answers: bool = typer.Option(True, "--answers/--no-answers", help="Also answer each question and score "
                                 "its citations' regions (no-model answers unless the index has a chat model)."),
    min_confidence: float = typer.Option(0.0, "--min-confidence", min=0.0, max=1.0,
                                         help="No-model answers: the abstention threshold (0: always the best "
                                              "candidate, so every answer's regions are scored)."),
    limit: int = typer.Option(None, help="Only the first N labelled questions (quick checks)."),
    json_out: str = json_option("the summary and per-question rows"),
) -> None:
    """Region hit rate, mean IoU and page share highlighted, for search hits and answers.

    Labels come from the dataset itself: questions whose gold answer (numbers normalised) occurs one
    to three times on their gold pages, each occurrence a gold box; FinanceBench answers computed from
    line items, the rows of those items. A hit is a returned region no bigger than an eighth of the
    page that contains a gold box's centre (or lies in a gold row).
    """
    from dataclasses import asdict

    from trident_local.evaluate.grounding import run_grounding, summarize
    from trident_local.evaluate.retrieval_run import answerable
    from trident_local.index import Index

    idx = Index.open(index_dir)
    records = answerable(load_benchmark(idx.store, dataset, adapter.value).records)
    rows = []

    def on_row(row) -> None:
        rows.append(row)
        if len(rows) % 20 == 0:
            err_console.print(f"[dim]{len(rows)} labelled questions scored[/dim]")

    if limit:
        from trident_local.evaluate.grounding import gold_boxes

        records = [r for r in records if gold_boxes(idx, r)][:limit]
    run_grounding(idx, records, pool=pool, k=k, answers=answers, min_confidence=min_confidence, on_row=on_row)
    s = summarize(rows)
    print_summary(json_out, f"grounding on {dataset.name}: {s['n']} labelled questions ({pool}, K = {k})", s)
    write_json(json_out, {"dataset": str(dataset), "pool": pool, "k": k, **s, "rows": [asdict(r) for r in rows]})


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    eval_app.command("grounding")(grounding)
