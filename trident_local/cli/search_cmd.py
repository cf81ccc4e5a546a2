"""`trident search`: the evidence pipeline's ranked pages with their regions, no answer generation."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from trident_local.cli.common import cli_command, human_console, json_option, write_json

POOL_HELP = ("Candidate pool: a registered pool (bm25, dense, fused, rrf, colpali, xkg, ...) or a fusion "
             "of named members (fused:bm25+colpali).")
FINDERS_HELP = ("Lead-page finders whose pages go first: all (default), none, or a comma list of names "
                "(line-items: the statement rows a filing question's line items are read from).")


@cli_command
def search(
    question: str = typer.Argument(..., help="The question or query."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory."),
    doc: list[str] = typer.Option(
        None, "--doc", "-d", help="Restrict to these documents (id, file name or stem)."
    ),
    pool: str = typer.Option("fused", help=POOL_HELP),
    finders: str = typer.Option("all", help=FINDERS_HELP),
    k: int = typer.Option(5, min=1, help="How many pages."),
    json_out: str = json_option("the hits"),
) -> None:
    """Ranked evidence pages for a question, each with the rows or lines on it that best match the
    question (``regions``: boxes in PDF points), and no answer generation. These are the pages `trident
    ask` reads and `trident eval retrieval` scores. A question that names financial line items (a metric
    it defines, a standard one, one item) gets the pages those items are read from first, their rows as
    the first regions (``found_by``: line-items)."""
    from trident_local.index import Index
    from trident_local.search import search as run_search

    idx = Index.open(index_dir)
    found = run_search(idx, question, pool=pool, doc=doc or None, k=k, finders=finders)
    table = Table(title=f"{pool}: {question}")
    for col in ("#", "document", "page", "score", "found by", "section", "best region"):
        table.add_column(col, overflow="fold")
    out = []
    for i, f in enumerate(found, 1):
        d = idx.store.document(f.doc_id)
        page = d.page(f.page)
        snippet = " ".join(page.text.split())[:160]
        shown = f.regions[0].text[:160] if f.regions else snippet
        table.add_row(str(i), d.file_name, str(f.page), f"{f.score:.3f}", f.found_by, page.section[:40], shown)
        out.append({**f.to_dict(), "file": d.file_name, "section": page.section, "snippet": snippet})
    human_console(json_out).print(table)
    write_json(json_out, out)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    app.command("search")(search)
