"""Structured model calls: one schema source, one strict parser, one call routine that counts.

A pydantic model defines each model-output shape; ``json_schema(Model)`` is the
JSON Schema sent for constrained decoding (vLLM ``StructuredOutputsParams(json=...)``,
OpenAI ``response_format``), and the same model validates the reply. Bounds in the
models (``max_length`` on strings and lists) keep a constrained reply short, and
``max_tokens`` is sized from them (:func:`reply_params`), so a reply that loops
cannot run into ``max_tokens``.

``parse_reply`` accepts only what the model itself wrote, with the safe repairs
the project has always made, each recorded by name:

- ``fence``: a Markdown code fence around the JSON is stripped;
- ``extracted``: chatter around the outermost JSON value is dropped.

A value that does not close (truncated output) is an error: a nested object
inside a cut-off reply is never taken for the answer. ``call`` sends a batch,
re-sends once with a larger budget the replies cut by ``max_tokens``
(``finish_reason == "length"``; never beyond the room the prompt leaves in the
model's context), parses and validates each, and records every repair, length
cut, retry, prompt cut to fit the context and failure in :class:`CallStats`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from trident_local.errors import ModelOutputError
from trident_local.models.budget import Fit, budget_of, reply_token_bound
from trident_local.models.protocols import ChatModel, ChatRequest, ChatResult, Message, SamplingParams

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```", re.S)
MAX_ERRORS_KEPT = 5


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a reply model, as sent for constrained decoding."""
    return model.model_json_schema()


def reply_params(schema: dict[str, Any] | type[BaseModel]) -> SamplingParams:
    """Greedy sampling with ``max_tokens`` sized to the longest reply the schema admits."""
    return SamplingParams(max_tokens=reply_token_bound(schema if isinstance(schema, dict) else json_schema(schema)))


def schema_request(system: str, user: str, schema: dict[str, Any], tag: str) -> ChatRequest:
    """A system + user request whose reply is held to ``schema``, ``max_tokens`` sized by :func:`reply_params`."""
    return ChatRequest([Message("system", system), Message("user", user)], params=reply_params(schema),
                       json_schema=schema, tag=tag)


def _outermost_value(text: str) -> tuple[str, bool]:
    """The JSON value that starts at the first ``{`` or ``[`` (string-aware) and whether it closed."""
    starts = [i for i in (text.find("{"), text.find("[")) if i != -1]
    if not starts:
        raise ModelOutputError(f"no JSON value in model output: {text[:200]!r}")
    start = min(starts)
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1], True
    return text[start:], False


def parse_json_text(text: str) -> tuple[Any, list[str]]:
    """(value, repairs) from a reply; ModelOutputError for no JSON, truncated or invalid JSON."""
    if not isinstance(text, str) or not text.strip():
        raise ModelOutputError("empty output")
    repairs: list[str] = []
    body = text.strip()
    m = _FENCE.search(body)
    if m:
        body = m.group(1).strip()
        repairs.append("fence")
    try:
        return json.loads(body), repairs
    except json.JSONDecodeError:
        pass
    candidate, closed = _outermost_value(body)
    if not closed:
        raise ModelOutputError(f"truncated JSON (the value never closes): {candidate[-80:]!r}")
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError as e:
        raise ModelOutputError(f"invalid JSON ({e.msg} at char {e.pos})") from None
    return value, [*repairs, "extracted"]


def parse_object(text: str) -> tuple[dict[str, Any], list[str]]:
    """(object, repairs): like :func:`parse_json_text`, for callers that need a JSON object."""
    value, repairs = parse_json_text(text)
    if not isinstance(value, dict):
        raise ModelOutputError(f"expected a JSON object, got {type(value).__name__}")
    return value, repairs


def validation_message(e: ValidationError) -> str:
    """A short '$.path: message' list from a pydantic error."""
    parts = []
    for err in e.errors()[:4]:
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        parts.append(f"${loc}: {err['msg']}")
    return "; ".join(parts)


def parse_reply(text: str, model: type[M]) -> tuple[M, list[str]]:
    """(validated reply, repairs); ModelOutputError when it cannot be had without guessing."""
    value, repairs = parse_json_text(text)
    try:  # validators may record their own repairs (e.g. dropping an invalid list item)
        return model.model_validate(value, context={"repairs": repairs}), repairs
    except ValidationError as e:
        raise ModelOutputError(validation_message(e)) from None


@dataclass
class CallStats:
    """What happened to a stage's model calls; reported in JSON output and checked by tests."""

    requests: int = 0
    ok: int = 0
    failed: int = 0  # backend errors (HTTP, engine)
    unparsable: int = 0  # no JSON, truncated, or not matching the schema
    length_cut: int = 0  # replies that hit max_tokens (before any retry)
    length_retried: int = 0  # of those, re-sent with a larger budget
    fitted: int = 0  # prompts cut to fit the model's context (see budget.fit)
    not_fitting: int = 0  # prompts that did not fit even cut: refused, never sent to be cut
    repairs: Counter[str] = field(default_factory=Counter)
    cuts: Counter[str] = field(default_factory=Counter)  # what was cut to fit, by kind
    errors: list[str] = field(default_factory=list)  # first few messages, for the user

    def note(self, msg: str) -> None:
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(msg[:200])

    def note_fit(self, fit: Fit) -> None:
        """Count a prompt that had to be cut (or could not be) to fit the context."""
        if fit.cuts:
            self.fitted += 1
            self.cuts.update(c.split(" ")[0] for c in fit.cuts)
        if not fit.fits:
            self.not_fitting += 1

    def merge(self, other: CallStats) -> CallStats:
        out = CallStats(
            self.requests + other.requests,
            self.ok + other.ok,
            self.failed + other.failed,
            self.unparsable + other.unparsable,
            self.length_cut + other.length_cut,
            self.length_retried + other.length_retried,
            self.fitted + other.fitted,
            self.not_fitting + other.not_fitting,
            self.repairs + other.repairs,
            self.cuts + other.cuts,
        )
        out.errors = (self.errors + other.errors)[:MAX_ERRORS_KEPT]
        return out

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)  # every field, in order; the counters as plain dicts
        d["repairs"], d["cuts"] = dict(self.repairs), dict(self.cuts)
        return d


@dataclass
class Reply(Generic[M]):
    """One request's outcome: the validated value, or None and the reason."""

    value: M | None
    result: ChatResult
    repairs: list[str] = field(default_factory=list)
    error: str | None = None


def with_schema(req: ChatRequest, model: type[BaseModel]) -> ChatRequest:
    """The request with the model's JSON Schema attached (for constrained decoding)."""
    return replace(req, json_schema=json_schema(model))


def call(
    chat: ChatModel,
    requests: Sequence[ChatRequest],
    models: type[M] | Sequence[type[M]],
    stats: CallStats | None = None,
    *,
    length_retry_factor: int = 2,
    max_tokens_cap: int = 4096,
) -> list[Reply[M]]:
    """Send ``requests`` as one batch and parse each reply with its model.

    Requests without a ``json_schema`` get their model's. Replies cut by
    ``max_tokens`` are re-sent once, as one batch, with ``length_retry_factor``
    times the budget (at most ``max_tokens_cap``, and at most the room the
    prompt leaves in the model's context); a reply still cut is reported as
    ``truncated``, never parsed for a partial value.
    """
    stats = stats if stats is not None else CallStats()
    kinds = list(models) if isinstance(models, Sequence) else [models] * len(requests)
    if len(kinds) != len(requests):
        raise ValueError("one reply model per request")
    reqs = [r if r.json_schema is not None else with_schema(r, k) for r, k in zip(requests, kinds, strict=True)]
    stats.requests += len(reqs)
    results = list(chat.chat(reqs)) if reqs else []
    cut = [i for i, r in enumerate(results) if not r.error and r.finish_reason == "length"]
    stats.length_cut += len(cut)
    budget = budget_of(chat) if cut else None
    budgets = [r.params.max_tokens for r in reqs]
    bigger_budget: dict[int, int] = {}
    for i in cut:
        new = min(max_tokens_cap, budgets[i] * length_retry_factor)
        room = budget.room(results[i].prompt_tokens) if budget and results[i].prompt_tokens else None
        new = new if room is None else min(new, room)
        if new > budgets[i]:
            bigger_budget[i] = new
    retry = list(bigger_budget)
    if retry:
        bigger = [replace(reqs[i], params=replace(reqs[i].params, max_tokens=bigger_budget[i])) for i in retry]
        stats.length_retried += len(retry)
        for i, big, res in zip(retry, bigger, chat.chat(bigger), strict=True):
            results[i], budgets[i] = res, big.params.max_tokens
    out: list[Reply[M]] = []
    for req, kind, res, sent_max in zip(reqs, kinds, results, budgets, strict=True):
        label = req.tag or "request"
        if res.error:
            stats.failed += 1
            stats.note(f"{label}: {res.error}")
            out.append(Reply(None, res, error=res.error))
            continue
        if res.finish_reason == "length":
            stats.unparsable += 1
            msg = f"reply cut at max_tokens={sent_max}"
            stats.note(f"{label}: {msg}")
            out.append(Reply(None, res, error=msg))
            continue
        try:
            value, repairs = parse_reply(res.text, kind)
        except ModelOutputError as e:
            stats.unparsable += 1
            stats.note(f"{label}: {e}")
            out.append(Reply(None, res, error=str(e)))
            continue
        stats.ok += 1
        stats.repairs.update(repairs)
        out.append(Reply(value, res, repairs))
    return out
