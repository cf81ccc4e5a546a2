"""`trident verify`: verify and correct the page citations of an answer against an indexed document."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from trident_local.cli.common import cli_command, console, err_console, json_option, write_json
from trident_local.models.runtime import runtime_report


def read_answer(arg: str) -> str | dict:
    """ANSWER: a .json / .txt file, "-" for stdin, or the answer text itself."""
    import json

    from trident_local.errors import TridentError

    if arg == "-":
        text = sys.stdin.read()
    else:
        p = Path(arg)
        if p.is_file():
            try:
                text = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise TridentError(f"cannot read {p}: {e}") from e
            if p.suffix.lower() == ".json":
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as e:
                    raise TridentError(f"{p} is not valid JSON ({e})") from e
                if not isinstance(obj, dict):
                    raise TridentError(f'{p}: expected {{"answer": ..., "claims": [...]}}')
                return obj
            return text
        if p.suffix.lower() in (".json", ".txt") and len(arg) < 300:
            raise TridentError(f"no such file: {p}")
        text = arg
    if not text.strip():
        raise TridentError("the answer is empty")
    return text


def _short(s: str, n: int = 70) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _region_text(r) -> str:
    """The supporting region's text ("95.2 | Coastal | 2023"), else what the region check found."""
    if r.regions:
        return _short(" | ".join(x["text"] for x in r.regions[:3]), 40)
    return _short(r.region_check, 40)


@cli_command
def verify(
    answer: str = typer.Argument(..., help="Answer file (.txt with \\[p. N] markers, or .json with claims), '-' "
                                          "for stdin, or the answer text itself."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index holding the document."),
    doc: str = typer.Option(..., "--doc", "-d", help="Document: doc_id, file name or file stem."),
    window: int = typer.Option(2, min=0, help="Pages on each side of a cited page searched for a fix."),
    text_judge: str = typer.Option(None, "--text-judge", help="Chat profile for the text channel, or 'none' "
                                   "for the no-model support scorer (default: the index's chat profile)."),
    image_judge: str = typer.Option("same", "--image-judge", help="VLM profile for the image channel, 'none', "
                                    "or 'same' (the text judge's model when it takes images)."),
    decompose: str = typer.Option(None, "--decompose", help="Chat profile that splits claims into atomic ones."),
    regions: bool = typer.Option(True, "--regions/--no-regions", help="Locate each claim's numbers on its cited "
                                 "page (the cell with its headers, or the cells it is computed from): a page "
                                 "whose regions state the claim keeps the citation, pointed at them."),
    json_out: str = json_option("the report"),
) -> None:
    """Judge each claim on its cited page, then keep / fix-region / fix-page / remove / flag, and print the
    corrected answer."""
    from rich.markup import escape
    from rich.table import Table

    from trident_local.verify.pipeline import Verifier

    parsed_answer = read_answer(answer)
    verifier = Verifier.from_index(index_dir, text=text_judge, image=image_judge, window=window,
                                   decompose_with=decompose, regions=regions)
    report = verifier.verify(parsed_answer, doc)
    write_json(json_out, {**report.to_dict(), "runtime": runtime_report()})
    table = Table(title=f"{report.file_name}: {len(report.results)} citation(s), window ±{report.window}")
    for col in ("claim", "text", "page", "text ch.", "image ch.", "verdict", "action", "→ page", "region", "flags"):
        table.add_column(col, overflow="fold")
    colors = {"keep": "green", "fix-region": "cyan", "fix-page": "yellow", "remove": "red", "flag": "magenta"}
    for r in report.results:
        ch = {j.channel: j.verdict + (f" {j.score:.2f}" if j.score is not None else "") for j in r.judgements}
        table.add_row(r.claim.claim_id, escape(_short(r.claim.text)), str(r.cited_page), ch.get("text", "-"),
                      ch.get("image", "-"), r.verdict, f"[{colors.get(r.action, 'white')}]{r.action}[/]",
                      str(r.new_page or ""), escape(_region_text(r)), ", ".join(r.flags))
    console.print(table)
    console.print(f"judges: {', '.join(f'{k}={v}' for k, v in report.judges.items())}; "
                  f"model calls: {report.model_calls}", highlight=False)
    for w in report.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
    if report.uncited:
        console.print(f"[dim]{len(report.uncited)} sentence(s) without a citation were not verified.[/dim]")
    console.rule("corrected answer")
    if isinstance(report.corrected_answer, dict):
        import json

        console.print(json.dumps(report.corrected_answer, indent=2, ensure_ascii=False), highlight=False,
                      markup=False)
    else:
        if report.corrected_answer:
            console.print(report.corrected_answer, highlight=False, markup=False)
        else:
            console.print("[dim](every cited claim was removed)[/dim]")


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    app.command("verify")(verify)
