"""`trident ask`: answer a question over an index, citing pages with their record fields."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from trident_local.cli.common import cli_command, console, json_option, registry_choice, write_json
from trident_local.cli.search_cmd import FINDERS_HELP
from trident_local.generate.ask import AskOptions
from trident_local.generate.base import answer_names
from trident_local.models.runtime import runtime_report
from trident_local.rerank.base import reranker_names
from trident_local.rerank.fields import FIELD_SETS
from trident_local.retrieve.base import pool_names

PoolName = registry_choice("PoolName", pool_names())
RerankerName = registry_choice("RerankerName", reranker_names())
FieldSet = registry_choice("FieldSet", list(FIELD_SETS))
AnswerName = registry_choice("AnswerName", answer_names())
ASK = AskOptions()  # the defaults, shared with the service, the Python API and `trident eval qa`


@cli_command
def ask(
    question: str = typer.Argument(..., help="The question."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory."),
    doc: list[str] = typer.Option(
        None, "--doc", "-d", help="Restrict to these documents (id, file name or stem)."
    ),
    pool: PoolName = typer.Option(ASK.pool, help="Candidate pool."),
    finders: str = typer.Option(ASK.finders, help=FINDERS_HELP),
    rerank: RerankerName = typer.Option(
        ASK.rerank,
        help="auto (the annotated rerank where the candidates' documents are annotated, else the pool order; "
        "the reason is printed) | none (pool top-K) | annotated (records + adaptive K; the fused match "
        "without a model) | fused.",
    ),
    fields: FieldSet = typer.Option(ASK.fields, help="Record fields for rerank."),
    answer: AnswerName = typer.Option(
        ASK.answer, help="Answer strategy (auto = format gate; without a model every strategy is evidence-first)."
    ),
    profile: str = typer.Option(
        None, help="Chat/VLM profile (default: the index's; 'none' = no-model, evidence-first answers)."
    ),
    k_max: int = typer.Option(
        None, "--k-max", min=1, help="Most pages to cite (default: the index's k_max)."
    ),
    verify: bool = typer.Option(
        ASK.verify, "--verify/--no-verify", help="Check the answer against its cited pages before returning it."
    ),
    min_confidence: float = typer.Option(
        None, "--min-confidence", min=0.0, max=1.0,
        help="No-model answers: answer only at this confidence (P(correct)) or above, else 'Not answerable' "
             "with the candidate and evidence (default: the threshold calibrated on MMLongBench-Doc; lower "
             "gives more answers and more wrong ones). Model answers have no calibrated confidence.",
    ),
    json_out: str = json_option("the full result"),
) -> None:
    """Retrieve a candidate pool, rerank it over annotated records, and answer with cited pages."""
    from trident_local.generate.ask import ask as run_ask
    from trident_local.index import Index
    from trident_local.query import Query

    idx = Index.open(index_dir)
    if profile is not None:  # this run's chat model, for every stage (pool route, rerank, answer)
        idx.models.use_profile("chat", profile)
    options = AskOptions(
        pool=pool.value, rerank=rerank.value, fields=fields.value, answer=answer.value, k_max=k_max, verify=verify,
        finders=finders,
    )
    res = run_ask(idx, Query(question, min_confidence=min_confidence), options, doc=doc or None)
    write_json(json_out, {**res.to_dict(), "runtime": runtime_report()})
    a = res.answer
    print_answer(a)
    for name, text in a.lenses.items():
        console.print(f"[dim]{name} lens:[/dim] {text}", highlight=False)
    if a.synthesis:
        console.print(f"[dim]synthesis: {a.synthesis}[/dim]", highlight=False)
    for err in a.errors:
        console.print(f"[yellow]model output problem:[/yellow] {err}", highlight=False)
    console.print(
        f"[bold]Cited pages[/bold] ({res.pool} pool, rerank {res.rerank.get('mode')}, "
        f"K = {len(a.citations)})",
        highlight=False,
    )
    for i, c in enumerate(a.citations, 1):
        table = Table(show_header=False, box=None, padding=(0, 1))
        table.add_column(style="dim", no_wrap=True)
        table.add_column(overflow="fold")
        for key, value in (
            ("section", c.section),
            ("visual", c.visual),
            ("entities", ", ".join(c.entities)),
            ("concept hits", ", ".join(c.concept_hits)),
            ("text", c.text[:300]),
        ):
            if value:
                table.add_row(key, value)
        console.print(f"[bold]{i}. {c.file_name}, page {c.page}[/bold]", highlight=False)
        console.print(table)
    if res.rerank.get("fallback"):
        console.print(
            f"[yellow]rerank fell back to the pool order:[/yellow] {res.rerank.get('fallback_reason')}"
        )
    gate = res.rerank.get("gate")
    if gate:
        why = {"pool": "the pool's order kept (fused top page not clearly ahead)",
               "fused": "fused order, K_max pages", "fused-cut": "fused order cut at adaptive K"}[gate]
        console.print(f"[dim]rerank {res.rerank['mode']}: {why}[/dim]", highlight=False)
    if res.rerank.get("note"):
        console.print(f"[dim]rerank: {res.rerank['note']}[/dim]", highlight=False)
    if res.route:
        console.print(
            f"[dim]xkg route: {res.route['query_class']} {res.route['entities']} "
            f"({res.route['source']})[/dim]",
            highlight=False,
        )
    console.print("[dim]timings: " + ", ".join(f"{k} {v:.2f} s" for k, v in res.timings.items()) + "[/dim]")


def print_answer(a) -> None:
    """The answer, the strategy that made it, its support, evidence and self-check verdicts."""
    from trident_local.cli.answer_view import answer_lines

    for line in answer_lines(a):
        console.print(line, highlight=False)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    app.command("ask")(ask)
