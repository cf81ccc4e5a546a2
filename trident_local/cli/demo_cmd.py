"""`trident demo`: index the sample PDFs (or a folder) and answer a question with cited pages."""

from __future__ import annotations

from pathlib import Path

import typer

from trident_local.cli.common import cli_command, console

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DEFAULT_QUESTION = "What was Helios Grid's revenue in the Coastal region in 2023?"


@cli_command
def demo(
    folder: Path = typer.Argument(None, help="PDFs to index (default: the sample PDFs shipped in samples/)."),
    question: str = typer.Option(DEFAULT_QUESTION, "--question", "-q", help="The question to answer."),
    index_dir: Path = typer.Option(Path(".trident/demo-index"), "--index", "-i", help="Where to keep the index."),
) -> None:
    """Index PDFs on the CPU defaults (no model weights needed) and answer a question with cited pages.

    Runs `trident index --annotate` then `trident ask`: BM25 + MiniLM dense retrieval fused by their
    z-scores, the no-model annotated rerank, and the evidence-first no-model answer, self-checked
    against its pages.
    """
    src = folder or SAMPLES
    if not src.exists():
        raise typer.BadParameter(f"{src} does not exist", param_hint="FOLDER")
    console.rule(f"[bold]1. index {src} -> {index_dir}")
    # through the command line parser, so that both commands run with their own defaults
    code = _run(["index", str(src), "--index", str(index_dir), "--annotate", "--workers", "2"])
    if code not in (0, 1):  # 1: some files failed; they were reported; answer over the rest
        raise typer.Exit(code)
    console.rule(f"[bold]2. ask: {question}")
    code = _run(["ask", question, "--index", str(index_dir)])
    if code:
        raise typer.Exit(code)


def _run(args: list[str]) -> int:
    """Run one `trident` command in this process; its exit status."""
    from typer.main import get_command

    from trident_local.cli import app

    try:
        get_command(app).main(args, prog_name="trident", standalone_mode=False)
    except typer.Exit as e:
        return e.exit_code
    return 0


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    app.command("demo")(demo)
