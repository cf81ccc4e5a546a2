"""`trident serve`: the document QA service (API + web page) over one or more indexes."""

from __future__ import annotations

from pathlib import Path

import typer

from trident_local.cli.common import cli_command, console


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    @app.command("serve")
    @cli_command
    def serve(
        index: list[Path] = typer.Option(None, "--index", "-i", help="Index directory to serve (repeatable; "
                                         "created empty if missing). Its name in the API is the folder name."),
        host: str = typer.Option(None, help="Address to bind (default 127.0.0.1; any other needs an API key)."),
        port: int = typer.Option(None, help="Port (default 8000)."),
        config: Path = typer.Option(None, "--config", "-c", help="Settings file (.toml or .json)."),
        data_dir: Path = typer.Option(None, "--data-dir", help="Where POST /api/indexes creates indexes."),
        add: list[Path] = typer.Option(None, "--add", help="PDFs or folders to index in the background into the "
                                       "first --index at start (files already indexed are skipped)."),
        chat: str = typer.Option(None, "--chat", help="Chat/VLM profile for every index (default: each index's "
                                 "own; 'none': no model). One engine per profile serves all requests, batched."),
    ) -> None:
        """Serve the HTTP API (OpenAPI docs at /docs) and the web page; no model weights needed."""
        import uvicorn

        from trident_local.serve import Settings, create_app
        from trident_local.serve.app import configure_logging
        from trident_local.serve.engine import ensure_index

        indexes = {p.resolve().name: str(p) for p in index} if index else None
        s = Settings.load(config, indexes=indexes, host=host, port=port, chat=chat,
                          data_dir=str(data_dir) if data_dir else None)
        if not s.indexes and not s.data_dir:
            raise typer.BadParameter("give --index DIR (or indexes / data_dir in --config)")
        s.check_exposure()  # before an index directory is created
        for p in index or []:
            ensure_index(p)
        configure_logging(s.log_json)
        app = create_app(s)
        if add:
            from trident_local.serve.jobs import JobFile

            first = next(iter(s.indexes))
            engine = app.state.engine
            todo = engine.pending_paths(first, [str(p) for p in add])
            if todo:
                files = [JobFile(Path(p).name, p, d, engine.page_count(p)) for p, d in todo]
                app.state.jobs.submit(first, "index", files)
        shown = "localhost" if s.host in ("127.0.0.1", "::1") else s.host
        console.print(f"serving {', '.join(s.indexes)} at http://{shown}:{s.port}/ (API docs: /docs)",
                      highlight=False)
        # SIGTERM: requests get drain_s to finish (then a JSON 503), the job's current file as long again
        uvicorn.run(app, host=s.host, port=s.port, log_level="warning", timeout_graceful_shutdown=s.drain_s)
