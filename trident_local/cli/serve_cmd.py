"""`trident serve`: an OpenAI-compatible HTTP server around any chat model profile."""

from __future__ import annotations

import typer

from trident_local.cli.common import cli_command, console


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    @app.command("serve")
    @cli_command
    def serve(
        profile: str = typer.Option(..., "--profile", "-p", help="Chat model profile (name or .toml path)."),
        host: str = typer.Option(
            "127.0.0.1", help="Address to bind; keep loopback unless you set --api-key."
        ),
        port: int = typer.Option(8000, help="Port (0 = any free port)."),
        backend: str | None = typer.Option(None, help="Override the profile's backend (e.g. transformers)."),
        api_key: str | None = typer.Option(None, envvar="TRIDENT_API_KEY", help="Require this Bearer key."),
        max_batch: int = typer.Option(16, help="Most requests gathered into one batch."),
        batch_wait_ms: float = typer.Option(
            10.0, help="How long to gather concurrent requests into a batch."
        ),
        allow_download: bool = typer.Option(
            False, "--allow-download", help="Fetch missing weights from hf_id."
        ),
    ) -> None:
        """Serve /v1/chat/completions and /v1/models for a chat profile (stdlib HTTP server)."""
        from trident_local.models.openai_server import ChatServer
        from trident_local.models.profiles import load_profile
        from trident_local.models.runtime import Models

        overrides = {"backend": backend} if backend else {}
        p = load_profile(profile)
        model = Models(options={"chat": {"allow_download": allow_download, **overrides}}).get("chat", p)
        server = ChatServer(
            model,
            host,
            port,
            model_name=p.name,
            api_key=api_key,
            max_batch=max_batch,
            batch_wait_s=batch_wait_ms / 1000,
        )
        console.print(f"serving {p.name!r} ({type(model).__name__}) at {server.url}", highlight=False)
        # a line a parent process can wait for (tests, scripts) before sending requests
        print(f"READY {server.url}", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
