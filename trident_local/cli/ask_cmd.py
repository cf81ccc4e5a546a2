"""`trident ask`: answer a question over an index, citing pages with their record fields."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from trident_local.cli.common import cli_command, console, to_jsonable


@cli_command
def ask(
    question: str = typer.Argument(..., help="The question."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory."),
    doc: list[str] = typer.Option(
        None, "--doc", "-d", help="Restrict to these documents (id, file name or stem)."
    ),
    pool: str = typer.Option("rrf", help="Candidate pool: bm25 | dense | rrf | colpali | xkg."),
    rerank: str = typer.Option("annotated", help="none (pool top-K) | annotated (records + adaptive K)."),
    fields: str = typer.Option(
        "full",
        help="Record fields for rerank: full | caption-only | drop-caption | "
        "drop-concepts | drop-entities | snippet-only.",
    ),
    answer: str = typer.Option("auto", help="plain | lenses | auto (format gate)."),
    profile: str = typer.Option(
        None, help="Chat/VLM profile (default: the index's; 'none' = no-model, extractive answers)."
    ),
    k_max: int = typer.Option(
        None, "--k-max", min=1, help="Most pages to cite (default: the index's k_max)."
    ),
    json_flag: bool = typer.Option(False, "--json", help="Print the full result as JSON instead of tables."),
    verify: bool = typer.Option(
        True, "--verify/--no-verify", help="Check the answer against its cited pages before returning it."
    ),
) -> None:
    """Retrieve a candidate pool, rerank it over annotated records, and answer with cited pages."""
    from trident_local.generate.ask import ask as run_ask
    from trident_local.index import Index
    from trident_local.models.profiles import build_model

    idx = Index.open(index_dir)
    chat_name = profile if profile is not None else idx.config.chat
    chat = build_model("chat", chat_name)
    res = run_ask(
        idx,
        question,
        doc=doc or None,
        pool=pool,
        rerank=rerank,
        fields=fields,
        answer=answer,
        chat=chat,
        chat_name=chat_name,
        k_max=k_max,
        verify=verify,
    )
    if json_flag:
        console.print_json(json.dumps(res.to_dict(), default=to_jsonable, ensure_ascii=False))
        return
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
