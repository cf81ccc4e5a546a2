"""Test double: a small OpenAI-compatible server around any `ChatModel` (stdlib http.server only).

Serves ``POST /v1/chat/completions``, ``GET /v1/models`` and ``GET /health``; for a
model with a ``context_budget()``, also what vLLM's server adds: ``max_model_len``
in the model card and ``POST /tokenize`` (the chat prompt's token count).
Concurrent HTTP requests are gathered for a few milliseconds into one
``chat()`` batch (one worker thread owns the model), so a batched backend
sees batches even though clients send one request per call. Meant for
loopback use and for testing the OpenAI client for real; ``vllm serve`` is
the production server.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trident_local.models.backends.chat_format import data_url_to_image
from trident_local.models.protocols import (
    ChatModel,
    ChatRequest,
    ChatResult,
    ImagePart,
    Message,
    SamplingParams,
)


class BadRequest(ValueError):
    """The payload is not a chat completion request we can run (HTTP 400)."""


def parse_chat_payload(payload: dict[str, Any]) -> ChatRequest:
    """OpenAI chat-completions JSON -> ChatRequest (images only as data URLs: no remote fetches)."""
    if not isinstance(payload.get("messages"), list) or not payload["messages"]:
        raise BadRequest("'messages' must be a non-empty list")
    if payload.get("stream"):
        raise BadRequest("stream=true is not supported by this server")
    if int(payload.get("n", 1) or 1) != 1:
        raise BadRequest("only n=1 is supported")
    messages = []
    for m in payload["messages"]:
        role = m.get("role")
        if role not in ("system", "user", "assistant"):
            raise BadRequest(f"unsupported message role {role!r}")
        content = m.get("content")
        if isinstance(content, str):
            messages.append(Message(role, content))
            continue
        if not isinstance(content, list):
            raise BadRequest("message content must be a string or a list of parts")
        parts: list[str | ImagePart] = []
        for part in content:
            kind = part.get("type")
            if kind == "text":
                parts.append(str(part.get("text", "")))
            elif kind == "image_url":
                url = part.get("image_url")
                url = url.get("url", "") if isinstance(url, dict) else str(url or "")
                try:
                    parts.append(ImagePart(image=data_url_to_image(url)))
                except Exception as e:
                    raise BadRequest(f"bad image_url: {e}") from e
            else:
                raise BadRequest(f"unsupported content part type {kind!r}")
        messages.append(Message(role, parts))
    max_tokens = payload.get("max_completion_tokens") or payload.get("max_tokens") or 512
    stop = payload.get("stop")
    temperature, top_p = payload.get("temperature"), payload.get("top_p")
    params = SamplingParams(
        max_tokens=int(max_tokens),
        temperature=0.0 if temperature is None else float(temperature),
        top_p=1.0 if top_p is None else float(top_p),
        seed=payload.get("seed"),
        stop=[stop] if isinstance(stop, str) else stop,
    )
    return ChatRequest(messages=messages, params=params, json_schema=_schema_of(payload))


def _schema_of(payload: dict[str, Any]) -> dict[str, Any] | None:
    rf = payload.get("response_format") or {}
    if rf.get("type") == "json_schema":
        js = rf.get("json_schema") or {}
        return js.get("schema") or {}
    if rf.get("type") == "json_object":
        return rf.get("schema") or {"type": "object"}
    so = payload.get("structured_outputs") or {}
    if so.get("json") is not None:
        return so["json"]
    return payload.get("guided_json")


def completion_body(model: str, res: ChatResult) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": res.text},
                "finish_reason": res.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": res.prompt_tokens,
            "completion_tokens": res.completion_tokens,
            "total_tokens": res.prompt_tokens + res.completion_tokens,
        },
    }


class MicroBatcher:
    """One thread owns the model; requests arriving within ``wait_s`` share one ``chat()`` call."""

    def __init__(self, model: ChatModel, max_batch: int = 16, wait_s: float = 0.01) -> None:
        self.model = model
        self.max_batch = max_batch
        self.wait_s = wait_s
        self.batch_sizes: list[int] = []  # observed batch sizes, for tests and stats
        self._q: queue.Queue[tuple[ChatRequest, Future[ChatResult]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="chat-batcher", daemon=True)
        self._thread.start()

    def submit(self, req: ChatRequest) -> Future[ChatResult]:
        fut: Future[ChatResult] = Future()
        self._q.put((req, fut))
        return fut

    def close(self) -> None:
        self._q.put(None)
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while True:
            first = self._q.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + self.wait_s
            while len(batch) < self.max_batch:
                try:
                    item = self._q.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    self._q.put(None)
                    break
                batch.append(item)
            self.batch_sizes.append(len(batch))
            try:
                results = self.model.chat([r for r, _ in batch])
            except Exception as e:  # a backend that breaks its contract still answers every client
                results = [
                    ChatResult(text="", finish_reason="error", error=f"{type(e).__name__}: {e}")
                ] * len(batch)
            for (_, fut), res in zip(batch, results, strict=True):
                fut.set_result(res)


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        model: ChatModel,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        model_name: str | None = None,
        api_key: str | None = None,
        max_batch: int = 16,
        batch_wait_s: float = 0.01,
        request_timeout_s: float = 600.0,
    ) -> None:
        super().__init__((host, port), _Handler)
        self.model_name = model_name or getattr(model, "name", "model")
        self.api_key = api_key
        self.request_timeout_s = request_timeout_s
        self.batcher = MicroBatcher(model, max_batch=max_batch, wait_s=batch_wait_s)

    def budget(self) -> Any:
        """The served model's context budget, where it has one (vLLM-style extras), else None."""
        fn = getattr(self.batcher.model, "context_budget", None)
        return fn() if callable(fn) else None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start_background(self) -> threading.Thread:
        """Serve from a daemon thread (tests, notebooks); stop with ``shutdown()``."""
        t = threading.Thread(target=self.serve_forever, name="chat-server", daemon=True)
        t.start()
        return t

    def server_close(self) -> None:
        super().server_close()
        self.batcher.close()


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet by default
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(status, {"error": {"message": message, "type": kind, "code": status}})

    def _authorized(self) -> bool:
        if not self.server.api_key:
            return True
        if self.headers.get("Authorization", "") == f"Bearer {self.server.api_key}":
            return True
        self._error(401, "invalid or missing API key", "authentication_error")
        return False

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        elif path == "/v1/models":
            if self._authorized():
                card: dict[str, Any] = {"id": self.server.model_name, "object": "model", "owned_by": "trident"}
                budget = self.server.budget()
                if budget is not None:
                    card["max_model_len"] = budget.max_model_len
                self._send(200, {"object": "list", "data": [card]})
        else:
            self._error(404, f"no route {self.path}", "not_found_error")

    def _tokenize(self) -> None:
        budget = self.server.budget()
        if budget is None:
            self._error(404, f"no route {self.path}", "not_found_error")
            return
        length = int(self.headers.get("Content-Length", "0"))
        payload = json.loads(self.rfile.read(length) or b"{}")
        messages = [Message(m["role"], m["content"]) for m in payload.get("messages", [])]
        self._send(200, {"count": budget.counter.count(messages), "max_model_len": budget.max_model_len,
                         "tokens": []})

    def do_POST(self) -> None:
        if self.path.split("?")[0].rstrip("/") == "/tokenize" and self._authorized():
            self._tokenize()
            return
        if self.path.split("?")[0].rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no route {self.path}", "not_found_error")
            return
        if not self._authorized():
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length) or b"{}")
            req = parse_chat_payload(payload)
        except (BadRequest, ValueError, TypeError, AttributeError) as e:
            self._error(400, str(e))
            return
        model = payload.get("model")
        if model and model != self.server.model_name:
            self._error(
                404,
                f"model {model!r} is not served here; serving {self.server.model_name!r}",
                "not_found_error",
            )
            return
        try:
            res = self.server.batcher.submit(req).result(timeout=self.server.request_timeout_s)
        except TimeoutError:
            self._error(504, "generation timed out", "timeout_error")
            return
        if res.error:
            self._error(400, res.error)
            return
        self._send(200, completion_body(self.server.model_name, res))
