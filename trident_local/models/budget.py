"""Prompt budgets in the model's own tokens: count a prompt, fit it to the context, size the reply.

A chat model reads prompt and reply from one context of ``max_model_len`` tokens. An engine
that gets more either refuses the request or cuts the reply short, so every large prompt
(rerank records, page text, lens pages, judge pages) is fitted before it is sent:

- :class:`TokenCounter` counts a prompt as the engine will, chat template included. Three
  kinds, best first: the model's own tokenizer (:class:`TemplateCounter`; the offline engine's
  ``llm.get_tokenizer()``, or a served model's local weights folder), the server's
  ``/tokenize`` endpoint (:class:`ServerCounter`, vLLM), else an estimate
  (:class:`EstimateCounter`, :data:`CHARS_PER_TOKEN` characters a token). ``source`` says
  which one counted, and ``exact`` whether the count is the engine's own.
- :func:`fit` takes the versions of a prompt a caller can build, fullest first, each one
  cutting the least useful content left, and returns the first that leaves room for its
  reply, with a :class:`Fit` that says what was cut.
- :func:`reply_token_bound` sizes ``max_tokens`` from a reply's JSON Schema: with bounded
  strings and arrays (and no whitespace, see ``vllm_chat.engine_kwargs``) a constrained
  reply has a largest length, and at least one character a token (ASCII) it fits in that
  many tokens, so it is never cut.

The runtime's :class:`~trident_local.models.metered.MeteredChat` checks every request again
before it is sent and refuses one that still does not fit: nothing is silently cut.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from trident_local.models.protocols import ChatRequest, Message

# The estimate, meant to over-count: English prose runs 3.5-4.5 characters a token, page text
# with tables 2.6 (SmolLM2, which splits digits one a token), a table row of figures under 2
# (all-MiniLM's WordPiece: "2023 95.2 | 27.8%" at 1.9).
CHARS_PER_TOKEN = 1.5
MESSAGE_OVERHEAD = 8  # role markers and separators of a chat template, per message (estimate)
IMAGE_TOKENS = 1280  # one page image, when nothing better is known (Qwen2-VL at 1M pixels)
REPLY_MARGIN = 8  # end-of-sequence and the template's closing tokens


class TokenCounter(Protocol):
    """Counts a chat prompt in tokens, as the engine will see it (template and images included)."""

    source: str  # e.g. "tokenizer (/models/x)", "server /tokenize", "estimate (2.0 chars/token)"
    exact: bool  # the engine's own tokenizer and template counted (images aside)

    def count(self, messages: Sequence[Message]) -> int: ...


def message_texts(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Messages as text-only chat dicts; text parts joined with a newline, as vLLM renders them."""
    return [
        {"role": m.role, "content": "\n".join(p for p in m.parts() if isinstance(p, str))} for m in messages
    ]


def n_images(messages: Sequence[Message]) -> int:
    return sum(len(m.images()) for m in messages)


class EstimateCounter:
    """Characters / CHARS_PER_TOKEN, plus a template overhead per message and a reserve per image."""

    exact = False

    def __init__(self, chars_per_token: float = CHARS_PER_TOKEN, image_tokens: int = IMAGE_TOKENS):
        self.chars_per_token = chars_per_token
        self.image_tokens = image_tokens
        self.source = f"estimate ({chars_per_token:g} chars/token)"

    def count(self, messages: Sequence[Message]) -> int:
        text = sum(math.ceil(len(m["content"]) / self.chars_per_token) for m in message_texts(messages))
        return text + MESSAGE_OVERHEAD * len(messages) + self.image_tokens * n_images(messages)


class TemplateCounter:
    """A Hugging Face tokenizer with its chat template: the count the engine makes for text prompts.

    Images are not rendered: each adds ``image_tokens`` (the processor's token count for a
    page at the profile's pixel cap), so counts with images are upper estimates.
    """

    def __init__(self, tokenizer: Any, source: str, image_tokens: int = IMAGE_TOKENS):
        self.tokenizer = tokenizer
        self.source = source
        self.image_tokens = image_tokens
        self.exact = True
        self._template = bool(getattr(tokenizer, "chat_template", None))

    @classmethod
    def from_folder(cls, folder: str | Path, image_tokens: int = IMAGE_TOKENS) -> TemplateCounter:
        """The tokenizer of a local model folder (no download)."""
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        return cls(tok, f"tokenizer ({folder})", image_tokens)

    def count(self, messages: Sequence[Message]) -> int:
        conv = message_texts(messages)
        if self._template:
            ids = self.tokenizer.apply_chat_template(conv, add_generation_prompt=True, tokenize=True)
            n = len(ids["input_ids"] if hasattr(ids, "keys") else ids)
        else:  # no template: the texts plus an estimated overhead per message
            n = sum(len(self.tokenizer.encode(m["content"], add_special_tokens=False)) for m in conv)
            n += MESSAGE_OVERHEAD * len(conv)
        return n + self.image_tokens * n_images(messages)


class ServerCounter:
    """vLLM's ``POST /tokenize`` with the chat messages: the server applies its own template."""

    exact = True
    source = "server /tokenize"

    def __init__(self, post: Any, model: str, image_tokens: int = IMAGE_TOKENS):
        """``post(path, json) -> dict``: the client's request function (retries, auth)."""
        self._post = post
        self.model = model
        self.image_tokens = image_tokens

    def count(self, messages: Sequence[Message]) -> int:
        body = {"model": self.model, "messages": message_texts(messages), "add_generation_prompt": True}
        return int(self._post("/tokenize", body)["count"]) + self.image_tokens * n_images(messages)


@dataclass
class ContextBudget:
    """A model's context (None: unknown, nothing is fitted) and how its prompts are counted."""

    max_model_len: int | None
    counter: TokenCounter = field(default_factory=EstimateCounter)

    def prompt_tokens(self, req: ChatRequest) -> int:
        return self.counter.count(req.messages)

    def room(self, prompt_tokens: int) -> int | None:
        """Tokens left for the reply after a prompt; None when the context is unknown."""
        return None if self.max_model_len is None else self.max_model_len - prompt_tokens

    def describe(self) -> dict[str, Any]:
        return {"max_model_len": self.max_model_len, "counter": self.counter.source,
                "exact": self.counter.exact}


UNLIMITED = ContextBudget(None)


def budget_of(chat: Any) -> ContextBudget:
    """The budget a chat model reports (``context_budget()``); unknown context for one that has none."""
    fn = getattr(chat, "context_budget", None)
    return fn() if callable(fn) else UNLIMITED


@dataclass
class Fit:
    """Which version of a prompt was sent: its tokens, its reply budget, and what was cut to fit."""

    prompt_tokens: int
    max_tokens: int
    max_model_len: int | None
    counter: str
    cuts: list[str] = field(default_factory=list)  # what was cut, in order; [] = the full prompt
    fits: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "max_tokens": self.max_tokens,
                "max_model_len": self.max_model_len, "counter": self.counter, "cuts": list(self.cuts),
                "fits": self.fits}


def fit(budget: ContextBudget, versions: Iterable[tuple[str, ChatRequest]]) -> tuple[ChatRequest, Fit]:
    """The first version whose prompt leaves room for its ``max_tokens``, fullest first.

    ``versions`` yields (what this version cuts, request) lazily, the full prompt first with
    an empty label; later ones cut more (one that changes nothing is skipped). When none
    fits, the last (shortest) one comes back with ``fits=False``: the runtime refuses it
    rather than let the engine cut it.
    """
    cuts: list[str] = []
    last: tuple[ChatRequest, Fit] | None = None
    for label, req in versions:
        if last is not None and req == last[0]:
            continue  # the cut changed nothing (e.g. texts already shorter): neither counted nor reported
        if label:
            cuts.append(label)
        if budget.max_model_len is None:  # nothing to fit to: the full prompt, uncounted
            return req, Fit(0, req.params.max_tokens, None, budget.counter.source, [], True)
        n = budget.prompt_tokens(req)
        ok = n + req.params.max_tokens <= budget.max_model_len
        last = req, Fit(n, req.params.max_tokens, budget.max_model_len, budget.counter.source, list(cuts), ok)
        if ok:
            return last
    if last is None:
        raise ValueError("fit() needs at least one version of the prompt")
    return last


def char_caps(full: int, floor: int = 0, steps: Sequence[float] = (0.7, 0.5, 0.35, 0.25, 0.15, 0.1)) -> list[int]:
    """Shorter and shorter caps for a text of ``full`` characters (never below ``floor``), for :func:`fit`."""
    caps = sorted({max(floor, int(full * s)) for s in steps if int(full * s) < full}, reverse=True)
    return [c for c in caps if c < full]


# -- reply bounds ---------------------------------------------------------------------------------------
class UnboundedSchema(ValueError):
    """A reply schema without a largest length (a string without maxLength, an array without maxItems)."""


def schema_max_chars(schema: dict[str, Any], root: dict[str, Any] | None = None) -> int:
    """The longest whitespace-free JSON a schema admits, in characters (escapes aside).

    Raises :class:`UnboundedSchema` where grammar-constrained output could run on forever.
    Objects count every property (optional ones too); numbers are unbounded in a JSON grammar.
    """
    root = root if root is not None else schema
    if "$ref" in schema:
        ref = str(schema["$ref"])
        if not ref.startswith("#/"):
            raise UnboundedSchema(f"external $ref {ref}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        return schema_max_chars(target, root)
    if "const" in schema:
        return len(json.dumps(schema["const"], ensure_ascii=False))
    if "enum" in schema:
        return max(len(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return max(schema_max_chars(s, root) for s in schema[key])
    types = schema.get("type")
    if isinstance(types, list):
        return max(schema_max_chars({**schema, "type": t}, root) for t in types)
    if types == "string":
        if "maxLength" not in schema:
            raise UnboundedSchema("a string without maxLength")
        return 2 + int(schema["maxLength"])
    if types == "array":
        if "maxItems" not in schema:
            raise UnboundedSchema("an array without maxItems")
        n = int(schema["maxItems"])
        item = schema_max_chars(schema.get("items", {}), root) if n else 0
        return 2 + n * item + max(0, n - 1)
    if types == "object":
        props = schema.get("properties", {})
        body = sum(len(json.dumps(k)) + 1 + schema_max_chars(v, root) for k, v in props.items())
        return 2 + body + max(0, len(props) - 1)
    if types == "boolean":
        return 5
    if types == "null":
        return 4
    raise UnboundedSchema(f"type {types!r}")


def reply_token_bound(schema: dict[str, Any]) -> int:
    """``max_tokens`` that a whitespace-free constrained reply of ``schema`` always fits in."""
    return schema_max_chars(schema) + REPLY_MARGIN
