"""The chat model as stages see it: every request checked against the context, every call counted.

The runtime wraps each chat model it builds in :class:`MeteredChat`. Before a batch is sent,
each request's prompt is counted with the model's own tokenizer where there is one (see
:mod:`trident_local.models.budget`): a reply budget that does not fit beside the prompt is
lowered to the room left when that room still holds a fair share of it (counted as
``lowered``), else the request is refused with an error that says why (``refused``), so an
engine never cuts a reply for lack of context without a trace. :class:`ChatUsage` counts what
the calls used; ``trident ... --json`` reports it under ``runtime``, and the engine test tier
checks from it that prompt + max_tokens never exceeded the model's context.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from trident_local.models.budget import UNLIMITED, ContextBudget, EstimateCounter
from trident_local.models.protocols import ChatRequest, ChatResult

# A reply budget lowered below this share of what the caller asked for would cut most replies:
# such a request is refused instead.
MIN_REPLY_SHARE = 0.25


@dataclass
class ChatUsage:
    """What a chat model's calls used, over one process, and the context they were checked against."""

    max_model_len: int | None = None  # None: unknown (or no call made yet)
    counter: str = ""  # what counted the prompts (see budget.TokenCounter.source)
    exact: bool = False
    requests: int = 0  # asked for by stages
    sent: int = 0  # sent to the engine (requests - refused)
    refused: int = 0  # prompt too long for the context: not sent, error returned
    lowered: int = 0  # sent with max_tokens lowered to the room the prompt left
    errors: int = 0  # the engine or server failed the request
    length: int = 0  # replies cut by max_tokens (finish_reason "length"), retries included
    prompt_tokens: int = 0  # as the engine reported them (counted where it reports none)
    completion_tokens: int = 0
    max_prompt_tokens: int = 0
    max_context: int = 0  # the largest prompt_tokens + max_tokens of any request sent
    max_count_error: int = 0  # the largest |counted - reported| prompt size
    counted_requests: int = 0  # requests whose prompt the engine reported, to compare counts with

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class MeteredChat:
    """A ``ChatModel`` wrapper: the budget check before sending, the usage after. Other attributes
    (``llm``, ``engine_kwargs``, ...) are the wrapped model's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.usage = ChatUsage()
        self._budget: ContextBudget | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def supports_images(self) -> bool:
        return bool(getattr(self.inner, "supports_images", False))

    @property
    def supports_json_schema(self) -> bool:
        return bool(getattr(self.inner, "supports_json_schema", False))

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def context_budget(self) -> ContextBudget:
        """The wrapped model's budget, asked once it answers (a server is asked for its context)."""
        with self._lock:
            if self._budget is None:
                fn = getattr(self.inner, "context_budget", None)
                try:
                    self._budget = fn() if callable(fn) else UNLIMITED
                except Exception:  # a server that is not up yet: unknown for now, asked again next call
                    return UNLIMITED
                u, b = self.usage, self._budget
                u.max_model_len, u.counter, u.exact = b.max_model_len, b.counter.source, b.counter.exact
            return self._budget

    def _count(self, budget: ContextBudget, req: ChatRequest) -> tuple[int, bool]:
        """(prompt tokens, whether that is the engine's own count); the estimate when counting fails."""
        try:
            n = budget.prompt_tokens(req)
        except Exception:  # e.g. /tokenize refused the messages: estimate, and do not compare
            return EstimateCounter().count(req.messages), False
        return n, budget.counter.exact and not any(m.images() for m in req.messages)

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        budget = self.context_budget()
        out: list[ChatResult | None] = [None] * len(requests)
        send: list[tuple[int, ChatRequest, int, bool]] = []
        refused = lowered = 0
        for i, req in enumerate(requests):
            n, exact = self._count(budget, req) if budget.max_model_len is not None else (0, False)
            room = budget.room(n)
            want = req.params.max_tokens
            if room is not None and room < want:
                if room >= max(1, int(want * MIN_REPLY_SHARE)):
                    req = replace(req, params=replace(req.params, max_tokens=room))
                    lowered += 1
                else:
                    refused += 1
                    out[i] = ChatResult(
                        text="", finish_reason="error",
                        error=f"prompt too long: {n} tokens ({budget.counter.source}) leave {max(room, 0)} of "
                              f"the model's {budget.max_model_len} for a reply of up to {want}",
                    )
                    continue
            send.append((i, req, n, exact))
        results = list(self.inner.chat([r for _, r, _, _ in send])) if send else []
        with self._lock:
            u = self.usage
            u.requests += len(requests)
            u.refused += refused
            u.lowered += lowered
            u.sent += len(send)
            for (i, req, n, exact), res in zip(send, results, strict=True):
                out[i] = res
                if res.error:
                    u.errors += 1
                    continue
                u.length += res.finish_reason == "length"
                prompt = res.prompt_tokens or n
                u.prompt_tokens += prompt
                u.completion_tokens += res.completion_tokens
                u.max_prompt_tokens = max(u.max_prompt_tokens, prompt)
                u.max_context = max(u.max_context, prompt + req.params.max_tokens)
                if exact and res.prompt_tokens:
                    u.counted_requests += 1
                    u.max_count_error = max(u.max_count_error, abs(res.prompt_tokens - n))
        return [r if r is not None else ChatResult(text="", error="not run") for r in out]
