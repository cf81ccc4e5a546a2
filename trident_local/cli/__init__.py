"""The `trident` command. Each subcommand lives in its own `*_cmd.py` module with a
``register(app, eval_app)`` function; modules import heavy dependencies inside
their commands so that `trident --help` stays fast."""

from __future__ import annotations

import importlib
import pkgutil

import typer

app = typer.Typer(
    name="trident",
    help="Question answering over long PDFs with local models; every answer cites checkable pages.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
eval_app = typer.Typer(help="Evaluate retrieval, answers, citations and traces on a dataset.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.endswith("_cmd")):
    importlib.import_module(f"{__name__}.{_mod}").register(app, eval_app)


def main() -> None:
    from trident_local.models.engine_guard import interrupt_ends_engines

    interrupt_ends_engines()  # a command that started an engine ends at once on Ctrl-C, engine included
    app()
