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

    Runs `trident index` then `trident ask`: BM25 + MiniLM dense retrieval fused by RRF, the
    no-model annotated rerank, and the evidence-first no-model answer, self-checked against its pages.
    """
    from trident_local.cli.ask_cmd import ask
    from trident_local.cli.index_cmd import index

    src = folder or SAMPLES
    if not src.exists():
        raise typer.BadParameter(f"{src} does not exist", param_hint="FOLDER")
    console.rule(f"[bold]1. index {src} -> {index_dir}")
    try:
        index(paths=[src], index_dir=index_dir, pools=None, embedder=None, ocr=None, multivector=None,
              annotate=True, workers=2,
              json_out=None)
    except typer.Exit as e:  # some files failed: they were reported; answer over the rest
        if e.exit_code != 1:
            raise
    console.rule(f"[bold]2. ask: {question}")
    ask(question=question, index_dir=index_dir, doc=None, pool="rrf", rerank="annotated", fields="full",
        answer="auto", profile=None, k_max=None, json_out=None, verify=True)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    app.command("demo")(demo)
