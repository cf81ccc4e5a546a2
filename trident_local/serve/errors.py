"""The one error body of the service, in the shape each client expects.

``/api/...`` answers ``{"error": message, "status": code}``; ``/v1/...`` (the OpenAI-compatible
routes) answers OpenAI's error object, which its SDKs turn into their usual exceptions. Handlers,
middleware and the browser guard all build errors here, so no path answers in the wrong shape.
"""

from __future__ import annotations

from typing import Any

OPENAI_PREFIX = "/v1/"
_OPENAI_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def openai_error(status: int, message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object: its SDKs turn it into the matching exception class and message."""
    kind = "server_error" if status >= 500 else _OPENAI_TYPES.get(status, "invalid_request_error")
    if status == 401:
        code = code or "invalid_api_key"
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_body(status: int, message: str, path: str = "", *, param: str | None = None, code: str | None = None,
               **extra: Any) -> dict[str, Any]:
    """The JSON error for a request to ``path``."""
    if path.startswith(OPENAI_PREFIX):
        return openai_error(status, message, param, code)
    return {"error": message, "status": status, **extra}
