"""`trident models ...`: the model profiles (packaged + the user models folder) and whether their weights are present."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from trident_local.cli.common import cli_command, console, err_console, json_option, write_json


def _shown(packaged: bool, weights: str) -> str:
    """The weights column: "-" for none, "(package)" for package-shipped, else a short path."""
    if not weights:
        return "-"
    if packaged:
        return "(inside a package)"
    try:
        return str(Path(weights).relative_to(Path.cwd()))
    except ValueError:
        return weights


def _rows() -> list[dict[str, Any]]:
    from trident_local.models.profiles import list_profiles

    rows = []
    for p in list_profiles():
        path = p.weights_path()
        missing = p.missing_files()
        rows.append(
            {
                "profile": p.name,
                "roles": p.roles,
                "backend": p.backend,
                "weights": str(path) if path is not None else "",
                "present": not missing,
                "missing": missing,
                "packaged": p.is_packaged,
                "hf_id": p.hf_id,
                "source": p.source,
                "origin": p.origin,
            }
        )
    return rows


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    models_app = typer.Typer(help="Model profiles (packaged, or *.toml in the user models folder) and their weights.", no_args_is_help=True)
    app.add_typer(models_app, name="models")

    @models_app.command("list")
    @cli_command
    def list_cmd(
        json_out: str = json_option("the rows"),
    ) -> None:
        """Show every profile: role, backend, weights path and whether the weights are there."""
        from rich.table import Table

        from trident_local.models.profiles import models_dir

        rows = _rows()
        table = Table(title="model profiles", caption=f"user models folder: {models_dir()}")
        for col in ("profile", "role", "backend", "from", "weights", "present", "hf id"):
            table.add_column(col, overflow="fold")
        for r in rows:
            if not r["weights"]:
                present = "n/a"
            elif r["present"]:
                present = "[green]yes[/green]" + (" (package)" if r["packaged"] else "")
            else:
                present = "[red]no[/red]"
            table.add_row(
                r["profile"],
                ", ".join(r["roles"]),
                r["backend"],
                r["origin"],
                _shown(r["packaged"], r["weights"]),
                present,
                r["hf_id"],
            )
        console.print(table)
        write_json(json_out, rows)

    @models_app.command("show")
    @cli_command
    def show_cmd(
        profile: str = typer.Argument(..., help="Profile name or path to a .toml file."),
        json_out: str = json_option("the profile"),
    ) -> None:
        """Print one profile as the loader reads it, and what is missing from its weights folder."""
        from dataclasses import asdict

        from rich.pretty import Pretty
        from rich.table import Table

        from trident_local.models.profiles import load_profile, missing_model_message

        p = load_profile(profile)
        data = {**asdict(p), "weights_path": str(p.weights_path() or ""), "missing": p.missing_files()}
        table = Table(title=f"profile {p.name}", show_header=False)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for key, value in data.items():
            if value not in ("", [], {}, None):
                table.add_row(key, value if isinstance(value, str) else Pretty(value))
        console.print(table)
        write_json(json_out, data)
        if p.needs_weights and not p.weights_present():
            err_console.print(f"[yellow]{missing_model_message(p)}[/yellow]", highlight=False)
