"""Chat through any OpenAI-compatible server (`vllm serve`, llama.cpp server, `trident serve`).

Requests in a batch are sent concurrently (bounded by ``max_concurrency``) so a
batching server can batch them; each is retried with exponential backoff on
connection errors, timeouts, 429 and 5xx, never on other 4xx. One failing
request yields a ChatResult with ``error`` set; the rest of the batch is kept.

Prompts are budgeted (:meth:`OpenAIChat.context_budget`) against the context the
profile gives (``max_model_len``) or the server reports (vLLM's ``/v1/models``),
counted with the tokenizer of the profile's local weights folder when it has one,
else the server's ``/tokenize`` (vLLM), else an estimate, and the result says which.
A JSON Schema goes as ``response_format`` (json_schema), which every
OpenAI-compatible server with structured output takes; on vLLM the whitespace-free
grammar is an engine setting (see ``vllm_chat.WHITESPACE_FREE_JSON``), made by
``scripts/serve_vllm.sh``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from trident_local.errors import TridentError
from trident_local.models.backends.chat_format import error_result, to_openai_messages
from trident_local.models.budget import (
    IMAGE_TOKENS,
    ContextBudget,
    EstimateCounter,
    ServerCounter,
    TemplateCounter,
    TokenCounter,
)
from trident_local.models.protocols import ChatRequest, ChatResult, Message

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class OpenAIChat:
    """`ChatModel` over HTTP. ``model`` is the served model name; "" asks the server's /v1/models.

    ``supports_images`` is off unless the profile says the served model takes images: the
    OpenAI API has no way to ask, and a text-only model answers every image request with 400.
    """

    concurrent = True  # thread-safe, and the server batches concurrent requests: a service calls it directly

    def __init__(
        self,
        model: str = "",
        *,
        name: str = "openai",
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 300.0,
        connect_timeout_s: float = 10.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 16.0,
        max_concurrency: int = 16,
        supports_images: bool = False,
        supports_json_schema: bool = True,
        extra_body: dict[str, Any] | None = None,
        weights: str = "",
        max_model_len: int | None = None,
        image_tokens: int = IMAGE_TOKENS,
    ) -> None:
        """``weights``: a local folder with the served model's tokenizer (the profile's ``weights``),
        to count prompts exactly; ``max_model_len``: the server's context, when it does not say."""
        self.name = name
        self.weights = weights
        self.max_model_len = max_model_len
        self.image_tokens = image_tokens
        self.base_url = (base_url or os.environ.get("TRIDENT_OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        self.supports_images = supports_images
        self.supports_json_schema = supports_json_schema
        self.max_retries = max(0, int(max_retries))
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_concurrency = max(1, int(max_concurrency))
        self.extra_body = dict(extra_body or {})
        key = api_key or os.environ.get(api_key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            limits=httpx.Limits(max_connections=self.max_concurrency),
        )
        self._model = model
        self._model_lock = threading.Lock()
        self._budget: ContextBudget | None = None

    # -- public ---------------------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The served model name, asked from the server once when the profile leaves it empty."""
        with self._model_lock:
            if not self._model:
                data = self._request("GET", "/models").get("data") or []
                if not data:
                    raise TridentError(f"the server at {self.base_url} lists no models")
                self._model = str(data[0]["id"])
            return self._model

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if not requests:
            return []
        try:
            _ = self.model
        except Exception as e:
            return [error_result(None, e) for _ in requests]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))

    def close(self) -> None:
        self._client.close()

    def context_budget(self) -> ContextBudget:
        """The context (profile, else the server's model card) and the best counter to be had;
        asked from the server once."""
        with self._model_lock:
            if self._budget is not None:
                return self._budget
        limit = self.max_model_len
        if limit is None:
            cards = self._request("GET", "/models").get("data") or []
            card = next((c for c in cards if c.get("id") == self.model), cards[0] if cards else {})
            limit = card.get("max_model_len")
        budget = ContextBudget(int(limit) if limit else None, self._counter())
        with self._model_lock:
            self._budget = budget
        return budget

    def _counter(self) -> TokenCounter:
        if self.weights:
            return TemplateCounter.from_folder(self.weights, self.image_tokens)
        counter = ServerCounter(lambda path, body: self._request("POST", self._root + path, json=body),
                                self.model, self.image_tokens)
        try:
            counter.count([Message("user", "hello")])  # does the server have /tokenize?
            return counter
        except Exception:
            return EstimateCounter(image_tokens=self.image_tokens)

    @property
    def _root(self) -> str:
        """The server's root URL (vLLM's /tokenize is not under /v1)."""
        return self.base_url.removesuffix("/v1")

    # -- internals ------------------------------------------------------------------------------

    def payload(self, req: ChatRequest) -> dict[str, Any]:
        """The JSON body for one request (public so tests and logs can see what is sent)."""
        p = req.params
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(req.messages, image_mode="data_url"),
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "top_p": p.top_p,
        }
        if p.seed is not None:
            body["seed"] = p.seed
        if p.stop:
            body["stop"] = list(p.stop)
        if req.json_schema is not None and self.supports_json_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": req.json_schema, "strict": True},
            }
        body.update(self.extra_body)
        return body

    def _one(self, req: ChatRequest) -> ChatResult:
        try:
            if not self.supports_images and any(m.images() for m in req.messages):
                raise ValueError(
                    f"{self.name}: this server's model takes text only, but the request has images"
                )
            data = self._request("POST", "/chat/completions", json=self.payload(req))
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            return ChatResult(
                text=(choice.get("message") or {}).get("content") or "",
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                finish_reason=choice.get("finish_reason") or "stop",
            )
        except Exception as e:
            return error_result(req, e)

    def _request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                r = self._client.request(method, path, **kw)
                if r.status_code < 400:
                    return r.json()
                err = _error_text(r)
                if r.status_code not in _RETRY_STATUS:
                    raise TridentError(f"HTTP {r.status_code} from {self.base_url}{path}: {err}")
                last = TridentError(f"HTTP {r.status_code} from {self.base_url}{path}: {err}")
                retry_after = _retry_after(r)
            except httpx.TransportError as e:  # connection refused/reset, timeouts
                last = e
            if attempt < self.max_retries:
                time.sleep(
                    min(retry_after, self.max_backoff_s)
                    if retry_after is not None
                    else self._backoff(attempt)
                )
        raise TridentError(
            f"{self.name}: gave up after {self.max_retries + 1} attempts: {type(last).__name__}: {last}"
        )

    def _backoff(self, attempt: int) -> float:
        base = min(self.max_backoff_s, self.backoff_s * (2**attempt))
        return base * (0.5 + random.random() / 2)  # jitter, so parallel retries spread out


def _error_text(r: httpx.Response) -> str:
    try:
        body = r.json()
        err = body.get("error", body)
        return str(err.get("message", err) if isinstance(err, dict) else err)[:500]
    except Exception:
        return r.text[:500]


def _retry_after(r: httpx.Response) -> float | None:
    try:
        return min(60.0, float(r.headers["Retry-After"]))
    except (KeyError, ValueError):
        return None
