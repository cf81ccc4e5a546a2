"""Model answers: plain (one call), lenses (three calls in one batch) + synthesis (one call).

The answer strategies "plain", "lenses" and "auto" (the format gate's pick) are here.

Replies are parsed as {"answer": ...} by :mod:`trident_local.models.structured`;
a reply with no JSON at all is taken as plain text (a small model often forgets
the wrapper; counted as the repair ``plain-text``), while a reply that starts
JSON and does not finish it, or is cut by max_tokens, is an error and never
shown as the answer. Synthesis is guarded by rules the model cannot override: when all
lenses say "Not answerable" no call is made, and a synthesized "Not answerable"
while some lens answered is replaced by the rule pick.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from trident_local.errors import ModelOutputError, TridentError
from trident_local.generate import prompts
from trident_local.generate.records import NOT_ANSWERABLE, Answer, is_not_answerable
from trident_local.models import structured
from trident_local.models.budget import Fit, budget_of, fit
from trident_local.models.protocols import (
    ChatModel,
    ChatRequest,
    ChatResult,
    ContentPart,
    Message,
    SamplingParams,
)

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.query import Query
    from trident_local.rerank.records import CandidateRecord
    from trident_local.retrieve.base import Hit
    from trident_local.store.index_store import IndexStore

LENS_ORDER = ("topical", "entity", "structural")
MAX_ANSWER_CHARS = prompts.MAX_ANSWER_CHARS
MAX_TOKENS = structured.reply_params(prompts.ANSWER_SCHEMA).max_tokens  # 1000 characters of answer + JSON
PAGE_TEXT_CUTS = (2000, 1200, 800, 400)  # characters per page, when the pages do not fit the context


def parse_answer(res: ChatResult) -> str:
    """The answer text of a reply; raises ModelOutputError when there is none."""
    if res.error:
        raise ModelOutputError(f"model call failed: {res.error}")
    if res.finish_reason == "length":
        raise ModelOutputError("reply cut at max_tokens")
    if "{" in res.text or "[" in res.text:
        text = structured.parse_reply(res.text, prompts.AnswerReply)[0].answer
    else:
        text = res.text  # no JSON at all: the model forgot the wrapper
    if not text.strip():
        raise ModelOutputError("empty answer")
    return " ".join(text.split())[:MAX_ANSWER_CHARS]


def _answers(chat: ChatModel, reqs: Sequence[ChatRequest]) -> list[str | ModelOutputError]:
    """Each request's answer, or its error; replies cut by max_tokens are re-sent once with more room."""
    results = [r.result for r in structured.call(chat, reqs, prompts.AnswerReply)]
    out: list[str | ModelOutputError] = []
    for res in results:
        try:
            out.append(parse_answer(res))
        except ModelOutputError as e:
            out.append(e)
    return out


def _request(system: str, question: str, pages: Sequence[ContentPart], tag: str) -> ChatRequest:
    content: list[ContentPart] = [f"Question: {question}", *pages, f"Question (again): {question}"]
    return ChatRequest(
        messages=[Message("system", system), Message("user", content)],
        params=SamplingParams(max_tokens=MAX_TOKENS),
        json_schema=prompts.ANSWER_SCHEMA,
        tag=tag,
    )


def plain(chat: ChatModel, question: str, pages: Sequence[ContentPart]) -> tuple[str, list[str]]:
    """(answer, errors); an unusable reply gives "Not answerable" and an error note."""
    got = _answers(chat, [_request(prompts.PLAIN_SYSTEM, question, pages, "answer-plain")])[0]
    if isinstance(got, ModelOutputError):
        return NOT_ANSWERABLE, [f"plain: {got}"]
    return got, []


@dataclass
class LensOutcome:
    lenses: dict[str, str]
    answer: str
    how: str
    errors: list[str] = field(default_factory=list)


def _tokens(s: str) -> set[str]:
    return set(s.lower().replace(",", "").split())


def _agreement(a: str, others: Sequence[str]) -> float:
    ta = _tokens(a)
    total = 0.0
    for b in others:
        tb = _tokens(b)
        if ta and tb:
            inter = len(ta & tb)
            total += 2 * inter / (len(ta) + len(tb))
    return total


def synthesis_request(question: str, readings: dict[str, str], answer_type: str) -> ChatRequest:
    return ChatRequest(
        messages=[
            Message("system", prompts.SYNTHESIS_SYSTEM),
            Message("user", prompts.synthesis_user(question, readings, answer_type)),
        ],
        params=SamplingParams(max_tokens=MAX_TOKENS),
        json_schema=prompts.ANSWER_SCHEMA,
        tag="answer-synthesis",
    )


def synthesis_versions(question: str, readings: dict[str, str], answer_type: str) -> Iterator[tuple[str, ChatRequest]]:
    """The synthesis call, then with each lens reading's tail cut (three readings of up to
    MAX_ANSWER_CHARS each need not fit a small context beside the reply)."""
    yield "", synthesis_request(question, readings, answer_type)
    for cap in (600, 300, 150):
        cut = {k: v[:cap] for k, v in readings.items()}
        yield f"readings to {cap} chars", synthesis_request(question, cut, answer_type)


def rule_pick(lenses: dict[str, str], answer_type: str) -> tuple[str, str]:
    """The format-aware rule: numeric -> entity lens, location -> structural lens, else consensus."""
    answered = {k: v for k, v in lenses.items() if not is_not_answerable(v)}
    if not answered:
        return NOT_ANSWERABLE, "all lenses: not answerable"
    preferred = {"numeric": "entity", "location": "structural"}.get(answer_type)
    if preferred and preferred in answered:
        return answered[preferred], f"rule: {answer_type} question -> {preferred} lens"
    best = max(
        answered,
        key=lambda k: (
            _agreement(answered[k], [v for j, v in answered.items() if j != k]),
            -LENS_ORDER.index(k),
        ),
    )
    return answered[best], f"rule: consensus -> {best} lens"


def lenses(chat: ChatModel, question: str, pages: Sequence[ContentPart], answer_type: str) -> LensOutcome:
    reqs = [
        _request(prompts.lens_system(name), question, pages, f"answer-lens:{name}") for name in LENS_ORDER
    ]
    out: dict[str, str] = {}
    errors: list[str] = []
    for name, got in zip(LENS_ORDER, _answers(chat, reqs), strict=True):
        if isinstance(got, ModelOutputError):
            out[name] = NOT_ANSWERABLE
            errors.append(f"lens {name}: {got}")
        else:
            out[name] = got
    if all(is_not_answerable(v) for v in out.values()):
        return LensOutcome(out, NOT_ANSWERABLE, "all lenses: not answerable (no synthesis call)", errors)
    syn, _ = fit(budget_of(chat), synthesis_versions(question, out, answer_type))
    answer = _answers(chat, [syn])[0]
    if isinstance(answer, ModelOutputError):
        errors.append(f"synthesis: {answer}")
        answer, how = rule_pick(out, answer_type)
        return LensOutcome(out, answer, how + " (synthesis unusable)", errors)
    if is_not_answerable(answer):
        answer, how = rule_pick(out, answer_type)
        return LensOutcome(
            out, answer, how + " (synthesis said not answerable while a lens answered)", errors
        )
    return LensOutcome(out, answer, "synthesis", errors)


def fitted_pages(
    chat: ChatModel, store: IndexStore, question: str, hits: Sequence[Hit], systems: Sequence[str]
) -> tuple[list[ContentPart], int, Fit]:
    """(page content, pages shown, fit): the pages every answer call sees, fitted to the context
    with the longest of ``systems``. Each page's text is shortened first (text models), then the
    lowest-ranked pages are left out, down to one."""
    from trident_local.generate.pages import TEXT_CHARS_PER_PAGE, page_content

    system = max(systems, key=len)
    shown, cap = len(hits), TEXT_CHARS_PER_PAGE

    def versions() -> Iterator[tuple[str, ChatRequest]]:
        nonlocal shown, cap
        yield "", _request(system, question, page_content(store, hits, chat), "fit")
        if not chat.supports_images:
            for cap in PAGE_TEXT_CUTS:
                yield f"page text to {cap} chars", _request(system, question, page_content(store, hits, chat, cap), "fit")
        for shown in range(len(hits) - 1, 0, -1):
            yield f"pages to {shown}", _request(system, question, page_content(store, hits[:shown], chat, cap), "fit")

    req, how = fit(budget_of(chat), versions())  # lazily: shown and cap are the returned version's
    content = req.messages[1].parts()[1:-1]  # between the question and the question again
    return content, shown, how


class _ModelStrategy:
    """Plain, lenses or the format gate's pick between them, over the pages' model content."""

    name: ClassVar[str]
    needs_model: ClassVar[bool] = True
    no_model: ClassVar[str | None] = "evidence"

    def answer(self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None,
               records: Sequence[CandidateRecord] = ()) -> Answer:
        from trident_local.generate.answer import citations
        from trident_local.generate.gate import gate

        if chat is None:  # get_answer_strategy hands out the no-model strategy instead
            raise TridentError(f"the {self.name!r} answer strategy needs a chat model")
        t0 = time.perf_counter()
        chosen, reason = gate(query.text, self.name)
        systems = [prompts.PLAIN_SYSTEM] if chosen == "plain" else [prompts.lens_system(n) for n in LENS_ORDER]
        content, shown, how = fitted_pages(chat, index.store, query.text, hits, systems)
        cites = citations(index.store, hits[:shown], records)  # only the pages the model was shown
        if chosen == "plain":
            text, errors = plain(chat, query.text, content)
            ans = Answer(query.text, text, f"plain:{chat.name}", cites, gate=reason, errors=errors)
        else:
            out = lenses(chat, query.text, content, query.answer_type)
            ans = Answer(
                query.text,
                out.answer,
                f"lenses:{chat.name}",
                cites,
                gate=reason,
                lenses=out.lenses,
                synthesis=out.how,
                errors=out.errors,
            )
        ans.prompt = how.to_dict()
        ans.seconds = time.perf_counter() - t0
        return ans


class PlainAnswer(_ModelStrategy):
    name: ClassVar[str] = "plain"


class LensesAnswer(_ModelStrategy):
    name: ClassVar[str] = "lenses"


class AutoAnswer(_ModelStrategy):
    name: ClassVar[str] = "auto"  # the format gate: multiple-choice and short questions plain, else lenses
