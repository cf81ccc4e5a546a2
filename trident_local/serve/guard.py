"""ASGI middleware that guards the browser edge: Host and Origin checks, security headers, and a
JSON answer for requests cut by a shutdown.

Without API keys (the loopback quick start) the browser is the threat: a page on another site can
POST a form to ``http://localhost:8000`` (CSRF) or resolve its own name to 127.0.0.1 (DNS
rebinding) and read the answers. Notebook servers close both holes the same way: serve only the
Host names the server is known by, and refuse unsafe methods whose ``Origin`` is another site.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from trident_local.serve.errors import error_body

UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

# The page builds every node with createElement/textContent and loads only /static files, so the
# strictest policy costs nothing; 'data:'/'blob:' images are the page renders the browser caches.
CSP = ("default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; "
       "frame-ancestors 'none'; form-action 'self'")
DOCS_CSP = CSP.replace("default-src 'self'", "default-src 'self'; script-src 'self' 'unsafe-inline'; "
                       "style-src 'self' 'unsafe-inline'")  # Swagger UI / ReDoc start from an inline script
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


def host_name(value: str) -> str:
    """``example.org`` of ``example.org:8000``, ``::1`` of ``[::1]:8000``; lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _json(status: int, message: str, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> list[dict]:
    body = json.dumps(error_body(status, message, path)).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    return [{"type": "http.response.start", "status": status, "headers": head},
            {"type": "http.response.body", "body": body}]


class BrowserGuard:
    """Refuse foreign Host headers and cross-site unsafe requests; add security headers to every answer;
    answer 503 in JSON when a shutdown cancels a request that has not started its response.

    ``hosts``: Host names served (``["*"]``: any). ``origins``: other origins allowed to write (the
    CORS list). A request without ``Origin`` (curl, SDKs) is not a browser's cross-site request.
    """

    def __init__(self, app: Any, hosts: list[str], origins: list[str], docs_paths: tuple[str, ...] = ()):
        self.app = app
        self.any_host = "*" in hosts
        self.hosts = {host_name(h) for h in hosts if h != "*"}
        self.origins = {o.rstrip("/").lower() for o in origins}
        self.docs_paths = docs_paths

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = headers.get("host", "")
        refusal = self._refusal(scope["method"], host, headers)
        csp = (DOCS_CSP if scope["path"] in self.docs_paths else CSP).encode()
        extra = [*SECURITY_HEADERS, (b"content-security-policy", csp)]
        started = False

        async def send_guarded(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                have = {k.lower() for k, _ in message.get("headers", [])}
                message = {**message, "headers": [*message.get("headers", []),
                                                  *((k, v) for k, v in extra if k not in have)]}
            await send(message)

        if refusal:
            for m in _json(refusal[0], refusal[1], scope["path"]):
                await send_guarded(m)
            return
        try:
            await self.app(scope, receive, send_guarded)
        except asyncio.CancelledError:  # uvicorn's drain time ran out (SIGTERM): say so in JSON, once
            if not started:
                for m in _json(503, "the server is shutting down; retry in a moment", scope["path"],
                               [(b"retry-after", b"5"), (b"connection", b"close")]):
                    await send_guarded(m)
            raise

    def _refusal(self, method: str, host: str, headers: dict[str, str]) -> tuple[int, str] | None:
        if not self.any_host and host_name(host) not in self.hosts:
            return 400, (f"this server does not answer to the host name {host_name(host)!r}; add it to "
                         "allowed_hosts (TRIDENT_SERVE_ALLOWED_HOSTS) if it is yours")
        if method not in UNSAFE:
            return None
        origin = headers.get("origin")
        if origin is None:
            if headers.get("sec-fetch-site") == "cross-site":
                return 403, "cross-site request refused"
            return None
        parts = urlsplit(origin.lower())
        if origin.lower().rstrip("/") in self.origins or (parts.netloc and parts.netloc == host.lower()):
            return None
        return 403, (f"cross-site request from {origin!r} refused: only this server's own page, or an "
                     "origin in cors_origins, may send it")
