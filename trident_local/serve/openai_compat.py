"""OpenAI-compatible chat over the served indexes: ``GET /v1/models``, ``POST /v1/chat/completions``.

Chat front ends and SDKs that speak OpenAI's protocol can ask an index without knowing trident's API:
each served index is a model ``trident/<index>``, the last user message is the question, and
trident's ask options travel as extra body fields (``extra_body`` in the official clients). The
answer is the same ``ask`` the /api/ route runs (same key scopes, model queue and metrics); its
citations come back as numbered markers in the text plus an extra ``citations`` field with the
page regions to highlight, which OpenAI clients keep as an unknown field.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import Field, create_model

from trident_local.errors import TridentError
from trident_local.generate.ask import AskOptions
from trident_local.generate.records import ABSTAINED
from trident_local.serve.auth import ApiKey
from trident_local.serve.engine import NotFound
from trident_local.serve.errors import openai_error
from trident_local.serve.openai_formats import (
    BadParam,
    check_unsupported,
    format_kind,
    json_answer,
    schema_answer,
    schema_of,
)
from trident_local.serve.routes import AskBody, AskOptionsBody, caller_key, require
from trident_local.serve.validate import Body, check_encodable, check_text
from trident_local.text import CLAIM_STOP_WORDS, words

router = APIRouter(tags=["openai"])
log = logging.getLogger("trident_local.serve")

PREFIX = "trident/"
OPTIONS = tuple(n for n in AskBody.model_fields if n != "question")  # trident's extras to OpenAI's request
KEEPALIVE_S = 15.0  # an SSE comment while a long ask runs, so proxies keep the stream open


# -- errors ---------------------------------------------------------------------------------------------
class ModelNotFound(NotFound):
    param, code = "model", "model_not_found"


# -- requests -------------------------------------------------------------------------------------------
# AskBody's fields without its question (the question comes from the messages): same types and bounds.
ChatOptionsBody = create_model(
    "ChatOptionsBody", __base__=Body, **{n: (f.annotation, f) for n, f in AskBody.model_fields.items() if n in OPTIONS})


class ChatMessage(Body):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None  # a string, or content parts ("text" ones only)


class ChatBody(ChatOptionsBody):
    """OpenAI's chat request. Sampling fields are accepted and ignored: the index's answer mode decides."""

    model: str
    messages: list[ChatMessage]
    stream: bool = False
    stream_options: dict[str, Any] | None = None  # include_usage: a last chunk with the usage
    n: int | None = Field(1, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    user: str | None = None
    response_format: dict[str, Any] | None = None  # text | json_object | json_schema (openai_formats.py)
    tools: list[Any] | None = None  # refused with a 400, never dropped silently
    tool_choice: Any = None
    functions: list[Any] | None = None
    function_call: Any = None


def message_text(content: str | list[dict[str, Any]] | None) -> str:
    """A message's text: the string, or its text parts joined; other parts (images, audio) are refused."""
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise BadParam(f"content parts of type {part.get('type')!r} are not supported; send text",
                           "messages")
        texts.append(part["text"])
    return "\n".join(texts)


# -- follow-ups -----------------------------------------------------------------------------------------
_FOLLOW_START = re.compile(r"\s*(?:and|what about|how about)\b", re.IGNORECASE)
_BACK_REFS = frozenset(["it", "its", "that", "this", "they", "them", "those", "these", "there", "same"])
FEW_WORDS = 2  # content words at most in a question that needs the turn before it


def is_follow_up(text: str) -> bool:
    """Whether ``text`` leans on the turn before: few content words, "and ..."/"what about ...", or "it"."""
    ws = [w.lower() for w in words(text)]
    content = [w for w in ws if w not in CLAIM_STOP_WORDS]
    return len(content) <= FEW_WORDS or bool(_FOLLOW_START.match(text)) or any(w in _BACK_REFS for w in ws)


def retrieval_question(user_turns: Sequence[str], limit: int | None = None) -> str:
    """The question to retrieve for: the last user turn, after the one before it when it is a follow-up.

    Retrieval has no memory, so "And in 2022?" alone finds nothing; with the previous question in
    front it finds the same document's other year. The kept context is trimmed (its end kept, from a
    word start) so the whole stays within ``limit`` characters: the new turn is what was asked.
    """
    last = user_turns[-1].strip() if user_turns else ""
    if not (last and len(user_turns) > 1 and is_follow_up(last)):
        return last
    before = user_turns[-2].strip()
    room = len(before) if limit is None else limit - len(last) - 1
    if len(before) > room:
        before = before[len(before) - room:] if room > 0 else ""
        before = before.split(" ", 1)[1] if " " in before else ""  # from a word start
    return f"{before.strip()} {last}" if before.strip() else last


def _check_turn(text: str, limit: int) -> None:
    """The last user turn alone against the question limit: OpenAI's 400 ``context_length_exceeded``."""
    if len(text) > limit:
        raise BadParam(f"the last user message is {len(text)} characters; the limit is {limit}", "messages",
                       "context_length_exceeded")
    check_text("question", text, limit)


# -- answers --------------------------------------------------------------------------------------------
def cited_content(out: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The answer text with [n] markers, and one citation per distinct cited (doc, page) with its regions.

    An abstention is said as one, with the closest evidence and only its page cited: a chat reader
    would take "Not answerable [1][2][3]" for five pages that support something.
    """
    a, evidence = out["answer"], out.get("evidence") or []
    abstained = a["text"] == ABSTAINED
    cites: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for i, c in enumerate(a.get("citations") or []):
        if (c["doc_id"], c["page"]) in seen or (abstained and c["page"] != a.get("support_page")):
            continue
        seen.add((c["doc_id"], c["page"]))
        ev = evidence[i] if i < len(evidence) else {}
        regions = [{"page": ev.get("page", c["page"]), "bbox": b["bbox"], "kind": b["kind"],
                    "text": b.get("text", "")} for b in ev.get("boxes", [])]
        cites.append({"n": len(cites) + 1, "doc_id": c["doc_id"], "file_name": c["file_name"],
                      "page": c["page"], "regions": regions})
    cites = cites[:1] if abstained else cites
    markers = "".join(f"[{c['n']}]" for c in cites)
    text = a["text"]
    if abstained and a.get("candidate"):
        conf = f" (confidence {a['confidence']:.2f})" if a.get("confidence") is not None else ""
        text = f"{ABSTAINED}{conf}. The closest evidence: {a['candidate']}"
    return (f"{text} {markers}" if markers else text), cites


def _trident(out: dict[str, Any], question: str) -> dict[str, Any]:
    a = out["answer"]
    info = {"answer": a["mode"], "question": question, "produced_by": out.get("produced_by", {})}
    if a.get("confidence") is not None:
        info["confidence"] = a["confidence"]
    return info


def _index_of(request: Request, model: str) -> str:
    """The index a model id names, after checking the caller's key may read it."""
    name = model[len(PREFIX):] if model.startswith(PREFIX) else ""
    if name:
        caller_key(request, "read", name)
    if name not in request.app.state.engine.handles:
        raise ModelNotFound(f"no model {model!r}; GET /v1/models lists them ({PREFIX}<index>)")
    return name


def _options(body: ChatBody) -> AskOptions:
    """The library's options from the request (a 400 listing the registry's names for an unknown one)."""
    return AskOptions(**{n: getattr(body, n) for n in AskOptionsBody.model_fields})


async def _ask(request: Request, index: str, question: str, body: ChatBody, chat: Any = None) -> dict[str, Any]:
    """The ask as POST /api/indexes/{index}/ask runs it: through the model queue, counted in the metrics.

    ``chat``: the model that puts the answer into the request's ``json_schema`` (in the same turn)."""
    m = request.app.state.metrics
    options = _options(body)
    async with request.app.state.gate.slot():
        out = await run_in_threadpool(request.app.state.workers.call, request.app.state.engine, "ask", index,
                                      question, options, docs=body.docs, min_confidence=body.min_confidence)
        if chat is not None:
            text, cites = cited_content(out)
            out["schema_content"] = await run_in_threadpool(schema_answer, chat, schema_of(body.response_format),
                                                            question, text, cites,
                                                            body.max_completion_tokens or body.max_tokens)
    m.answers.labels(out["answer"]["mode"]).inc()
    if out["rerank"].get("fallback"):
        m.fallbacks.inc()
    return out


async def _admitted(ask: Coroutine[Any, Any, dict[str, Any]]) -> asyncio.Task:
    """Start ``ask`` and return once the model queue took it; a full queue raises QueueFull here (a 429).

    The gate admits or refuses synchronously, before its first await, and a new task runs up to its
    first await before this coroutine resumes from ``sleep(0)``.
    """
    task = asyncio.ensure_future(ask)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a left stream's error is not logged
    await asyncio.sleep(0)
    if task.done():
        task.result()
    return task


# -- routes ---------------------------------------------------------------------------------------------
@router.get("/v1/models")
def list_models(request: Request, key: ApiKey | None = Depends(require("read"))) -> dict:
    engine = request.app.state.engine
    return {"object": "list", "data": [_model(engine, n) for n in engine.handles
                                       if key is None or key.allows("read", n)]}


@router.get("/v1/models/{model:path}", dependencies=[Depends(require("read"))])
def get_model(request: Request, model: str) -> dict:
    return _model(request.app.state.engine, _index_of(request, model))


def _model(engine: Any, name: str) -> dict[str, Any]:
    with engine.reading(name) as idx:
        docs, created = len(idx.store.doc_ids()), int(idx.store.manifest.created)
    return {"id": PREFIX + name, "object": "model", "created": created, "owned_by": "trident",
            "trident": {"index": name, "documents": docs, "options": list(OPTIONS)}}


@router.post("/v1/chat/completions", dependencies=[Depends(require("read"))], response_model=None)
async def chat_completions(request: Request, body: ChatBody) -> dict | StreamingResponse:
    """Every check and the queue's admission happen before a stream starts, so they are plain HTTP errors."""
    index = _index_of(request, body.model)
    if body.n not in (None, 1):
        raise BadParam("only n = 1 is supported", "n")
    if not body.messages:
        raise BadParam("messages is empty: send at least one user message", "messages")
    texts = [(m.role, message_text(m.content)) for m in body.messages]
    user_turns = [t for role, t in texts if role == "user"]
    if not user_turns:
        raise BadParam("no user message: the last user message is the question", "messages")
    check_unsupported(body.tools, body.tool_choice, body.functions, body.function_call)
    kind = format_kind(body.response_format)
    limit = request.app.state.settings.max_question_chars
    _check_turn(user_turns[-1].strip(), limit)  # a short follow-up after a long question is fine
    question = check_text("question", retrieval_question(user_turns, limit), limit)
    check_encodable("document list", body.docs or [])
    _options(body)  # an unknown pool or reranker: a 400 now, not in the middle of a stream
    if body.docs:  # unknown documents: a 404 now, not an error in the middle of a stream
        await run_in_threadpool(_resolve_docs, request.app.state.engine, index, body.docs)
    chat = await run_in_threadpool(_schema_model, request.app.state.engine, index) if kind == "json_schema" else None
    usage = bool((body.stream_options or {}).get("include_usage"))
    reply = _Reply(body.model, sum(len(t.split()) for _, t in texts), question, kind, usage)
    if not body.stream:
        return reply.completion(await _ask(request, index, question, body, chat))
    task = await _admitted(_ask(request, index, question, body, chat))
    return StreamingResponse(reply.stream(task), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _schema_model(engine: Any, index: str) -> Any:
    """The index's chat model when it can decode to a JSON schema; else a 400 (nothing is dropped)."""
    chat = engine.handle(index).models.chat
    if chat is None or not getattr(chat, "supports_json_schema", False):
        raise BadParam("response_format json_schema needs a chat model with guided decoding; this index answers "
                       "without one (use json_object, or serve it with --chat PROFILE)", "response_format")
    return chat


def _resolve_docs(engine: Any, index: str, docs: list[str]) -> None:
    with engine.reading(index) as idx:
        for d in docs:
            engine._resolve(idx, d)


class _Reply:
    """One completion's id, model and prompt size, and its two response forms."""

    def __init__(self, model: str, prompt_tokens: int, question: str, kind: str = "text", usage: bool = False):
        self.id, self.created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        self.model, self.prompt_tokens, self.question = model, prompt_tokens, question
        self.kind, self.usage = kind, usage

    def content(self, out: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """The message content in the requested ``response_format``, and the citations."""
        text, cites = cited_content(out)
        if self.kind == "json_object":
            return json_answer(text, cites, out), cites
        if self.kind == "json_schema":
            return out["schema_content"], cites
        return text, cites

    def _usage(self, content: str) -> dict[str, int]:
        n = len(content.split())
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": n, "total_tokens": self.prompt_tokens + n}

    def _base(self, obj: str) -> dict[str, Any]:
        return {"id": self.id, "object": obj, "created": self.created, "model": self.model}

    def completion(self, out: dict[str, Any]) -> dict[str, Any]:
        content, cites = self.content(out)
        return {**self._base("chat.completion"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}],
                "usage": self._usage(content), "citations": cites, "trident": _trident(out, self.question)}

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        d = {**self._base("chat.completion.chunk"),
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return f"data: {json.dumps(d, ensure_ascii=False)}\n\n"

    async def stream(self, task: asyncio.Task) -> AsyncIterator[str]:
        """The role at once, then the answer word by word, then citations on the last chunk, then [DONE]."""
        yield self.chunk({"role": "assistant"})
        try:
            while not task.done():
                done, _ = await asyncio.wait({task}, timeout=KEEPALIVE_S)
                if not done:
                    yield ": still answering\n\n"
            out = task.result()
        except Exception as e:  # the ask failed after the stream started: an error event, as OpenAI sends
            yield f"data: {json.dumps(_stream_error(e))}\n\n"
            yield "data: [DONE]\n\n"
            return
        content, cites = self.content(out)
        for piece in re.split(r"(?<=\s)(?=\S)", content):
            if piece:
                yield self.chunk({"content": piece})
        yield self.chunk({}, "stop", citations=cites, trident=_trident(out, self.question))
        if self.usage:  # stream_options.include_usage: OpenAI's last chunk, no choices, the usage
            d = {**self._base("chat.completion.chunk"), "choices": [], "usage": self._usage(content)}
            yield f"data: {json.dumps(d, ensure_ascii=False)}\n\n"
        yield "data: [DONE]\n\n"


def _stream_error(e: Exception) -> dict[str, Any]:
    if isinstance(e, TridentError):
        return openai_error(404 if isinstance(e, NotFound) else 400, str(e))
    log.exception("internal error in a streamed chat completion", exc_info=e)
    return openai_error(500, f"internal error ({type(e).__name__}); see the server log")
