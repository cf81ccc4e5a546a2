"""The OpenAI-compatible endpoints, driven by the official `openai` client against a real uvicorn server."""

from __future__ import annotations

import re
import threading

import httpx
import pytest
from serve_helpers import build_index, copy_index, uvicorn_thread

from trident_local.serve import Settings, create_app
from trident_local.serve.gate import Gate
from trident_local.serve.openai_compat import is_follow_up, retrieval_question

pytestmark = pytest.mark.integration

openai = pytest.importorskip("openai", reason="the openai client is a dev dependency (pip install -e .[dev])")

ADMIN = "admin-secret"
LED = "Which region led with 2,900 megawatts?"
USER_LED = [{"role": "user", "content": LED}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """Two indexes ("r", "s") of the same two reports, behind an admin key; yields (base url, app)."""
    d = tmp_path_factory.mktemp("openai")
    built = build_index(d / "built", d / "pdfs")
    indexes = {n: str(copy_index(built, d / n)) for n in ("r", "s")}
    app = create_app(Settings(indexes=indexes, api_key=ADMIN))
    with uvicorn_thread(app) as url:
        yield url, app


def client(server, key: str = ADMIN) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server[0]}/v1", api_key=key, max_retries=0, timeout=120)


def ask(server, question: str, **kw):
    messages = [{"role": "user", "content": question}]
    return client(server).chat.completions.create(model="trident/r", messages=messages, **kw)


def page_size(server, doc_id: str, page: int) -> tuple[float, float]:
    r = httpx.get(f"{server[0]}/api/indexes/r/documents/{doc_id}/pages/{page}/boxes",
                  headers={"Authorization": f"Bearer {ADMIN}"})
    return r.json()["width"], r.json()["height"]


# -- the follow-up rule (pure) --------------------------------------------------------------------------
@pytest.mark.parametrize("text, follow", [
    ("And in 2022?", True), ("What about the North?", True), ("how about solar", True),
    ("Why did it grow?", True), ("Is the same true for wind?", True), ("2022?", True),
    ("Which region led with 2,900 megawatts?", False),
    ("What was the wind capacity in the South in 2021?", False),
])
def test_follow_up_detection(text: str, follow: bool) -> None:
    assert is_follow_up(text) is follow


def test_retrieval_question_joins_a_follow_up_to_the_previous_user_turn_only() -> None:
    first = "What was the wind capacity in the South in 2021?"
    assert retrieval_question([first, "And in 2022?"]) == f"{first} And in 2022?"
    assert retrieval_question([first, LED]) == LED
    assert retrieval_question(["And in 2022?"]) == "And in 2022?"
    assert retrieval_question([first, "  "]) == ""  # an empty question stays empty (a 400)


# -- models ---------------------------------------------------------------------------------------------
def test_models_list_every_index_and_a_limited_key_sees_only_its_own(server) -> None:
    models = client(server).models.list().data
    assert sorted(m.id for m in models) == ["trident/r", "trident/s"]
    extra = models[0].model_extra["trident"]
    assert extra["documents"] == 2 and {"docs", "pool", "rerank", "answer", "k_max", "min_confidence"} <= set(
        extra["options"])
    assert all(m.owned_by == "trident" and isinstance(m.created, int) for m in models)
    r = httpx.post(f"{server[0]}/api/keys", json={"scope": "read", "indexes": ["r"]},
                   headers={"Authorization": f"Bearer {ADMIN}"})
    reader = client(server, r.json()["key"])
    assert [m.id for m in reader.models.list().data] == ["trident/r"]
    with pytest.raises(openai.PermissionDeniedError):
        reader.chat.completions.create(model="trident/s", messages=USER_LED)
    assert reader.chat.completions.create(model="trident/r", messages=USER_LED).choices


# -- answers --------------------------------------------------------------------------------------------
def test_answer_carries_numbered_citations_with_page_regions(server) -> None:
    resp = ask(server, LED)
    assert resp.id.startswith("chatcmpl-") and resp.object == "chat.completion" and resp.model == "trident/r"
    choice = resp.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    content, extra = choice.message.content, resp.model_extra
    cites = extra["citations"]
    assert cites and [c["n"] for c in cites] == list(range(1, len(cites) + 1))
    assert re.findall(r"\[(\d+)\]", content) == [str(c["n"]) for c in cites]
    assert len({(c["doc_id"], c["page"]) for c in cites}) == len(cites)
    assert "South" in content or any(c["page"] == 2 for c in cites)
    regions = [(c, g) for c in cites for g in c["regions"]]
    assert regions
    for c, g in regions:
        w, h = page_size(server, c["doc_id"], c["page"])
        x0, y0, x1, y1 = g["bbox"]
        assert g["page"] == c["page"] and 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        assert g["kind"] and g["text"]
    info = extra["trident"]
    assert info["answer"] and info["produced_by"]["answer"] == info["answer"]
    assert resp.usage.completion_tokens == len(content.split())
    assert resp.usage.prompt_tokens == len(LED.split())


def test_stream_sends_role_first_then_words_then_citations(server) -> None:
    whole = ask(server, LED)
    chunks = list(ask(server, LED, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant" and not chunks[0].choices[0].delta.content
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    pieces = [c.choices[0].delta.content for c in chunks[1:-1]]
    assert len(pieces) > 1 and all(pieces)
    assert "".join(pieces) == whole.choices[0].message.content
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop" and not last.choices[0].delta.content
    assert last.model_extra["citations"] == whole.model_extra["citations"]
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


def test_role_chunk_arrives_while_the_answer_is_still_being_computed(server, monkeypatch) -> None:
    engine, seen_first, early = server[1].state.engine, threading.Event(), []
    real = engine.ask

    def slow(*a, **k):  # the ask waits until the client has the first chunk (or gives up: then it came late)
        early.append(seen_first.wait(30))
        return real(*a, **k)

    monkeypatch.setattr(engine, "ask", slow)
    chunks = iter(ask(server, LED, stream=True))
    assert next(chunks).choices[0].delta.role == "assistant"
    seen_first.set()
    assert [c for c in chunks][-1].choices[0].finish_reason == "stop"
    assert early == [True]


def test_follow_up_turn_is_asked_with_the_previous_question(server) -> None:
    first = "What was the wind capacity in the South in 2021?"
    c = client(server)
    a1 = c.chat.completions.create(model="trident/r", messages=[{"role": "user", "content": first}])
    messages = [{"role": "system", "content": "Answer from the reports."},
                {"role": "user", "content": first},
                {"role": "assistant", "content": a1.choices[0].message.content},
                {"role": "user", "content": [{"type": "text", "text": "And in 2022?"}]}]
    a2 = c.chat.completions.create(model="trident/r", messages=messages)
    cites = a2.model_extra["citations"]
    assert cites and (cites[0]["file_name"], cites[0]["page"]) == ("wind.pdf", 2)  # the wind report's table
    assert sum(x["file_name"] == "wind.pdf" for x in cites) > len(cites) / 2
    assert "wind" in a2.model_extra["trident"]["question"]


@pytest.mark.parametrize("doc", ["solar.pdf", "wind.pdf"])
def test_docs_scope_through_extra_body(server, doc: str) -> None:
    resp = ask(server, LED, extra_body={"docs": [doc]})
    cites = resp.model_extra["citations"]
    assert cites and all(c["file_name"] == doc for c in cites)


def test_extra_options_keep_the_ask_apis_bounds(server) -> None:
    with pytest.raises(openai.BadRequestError) as e:  # OpenAI answers a body it cannot use with 400
        ask(server, LED, extra_body={"k_max": 99})
    assert e.value.param == "k_max"
    with pytest.raises(openai.BadRequestError, match="rerankers: .*auto"):  # names read from the registry
        ask(server, LED, extra_body={"rerank": "magic"})
    with pytest.raises(openai.NotFoundError):
        ask(server, LED, stream=True, extra_body={"docs": ["nope.pdf"]})  # before the stream starts


# -- errors ---------------------------------------------------------------------------------------------
def test_wrong_or_missing_key_is_an_authentication_error(server) -> None:
    with pytest.raises(openai.AuthenticationError) as e:
        client(server, "wrong").chat.completions.create(model="trident/r", messages=USER_LED)
    assert e.value.code == "invalid_api_key" and e.value.type == "authentication_error"
    with pytest.raises(openai.AuthenticationError):
        client(server, "wrong").models.list()


@pytest.mark.parametrize("kw, param", [
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "assistant", "content": "Hello."}]}, "messages"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     "messages"),
    ({"messages": [{"role": "user", "content": "   "}]}, None),
    ({"messages": [{"role": "user", "content": LED}], "n": 2}, "n"),
])
def test_bad_requests_are_invalid_request_errors(server, kw: dict, param: str | None) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client(server).chat.completions.create(model="trident/r", **kw)
    assert e.value.type == "invalid_request_error" and e.value.param == param


def test_unknown_model_is_not_found_and_other_paths_keep_their_error_shape(server) -> None:
    with pytest.raises(openai.NotFoundError) as e:
        client(server).chat.completions.create(model="trident/nope", messages=USER_LED)
    assert e.value.code == "model_not_found" and e.value.param == "model"
    r = httpx.get(f"{server[0]}/api/indexes/nope", headers={"Authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 404 and set(r.json()) == {"error", "status"}
    assert isinstance(r.json()["error"], str)


def test_full_queue_is_a_rate_limit_error_before_any_stream(server) -> None:
    app = server[1]
    saved, app.state.gate = app.state.gate, Gate(slots=1, queue=0, retry_after=7)
    app.state.gate.admitted = 1  # one ask holds the only slot
    try:
        for stream in (False, True):
            with pytest.raises(openai.RateLimitError) as e:
                ask(server, LED, stream=stream)
            assert e.value.response.headers["retry-after"] == "7" and e.value.type == "rate_limit_error"
    finally:
        app.state.gate = saved


def test_an_ask_failing_mid_stream_ends_it_with_an_error_event(server, monkeypatch) -> None:
    def boom(*_a, **_k):
        raise RuntimeError("engine fell over")

    monkeypatch.setattr(server[1].state.engine, "ask", boom)
    stream = ask(server, LED, stream=True)
    assert next(iter(stream)).choices[0].delta.role == "assistant"  # the request was taken
    with pytest.raises(openai.APIError, match="internal error"):
        list(stream)


# -- protocol fields that are honoured or refused, never dropped ------------------------------------------
def test_json_object_content_is_the_answer_with_citations_and_confidence(server) -> None:
    import json

    resp = ask(server, LED, response_format={"type": "json_object"})
    d = json.loads(resp.choices[0].message.content)
    assert set(d) >= {"answer", "citations", "confidence"} and d["answer"]
    assert d["citations"] and all(c["regions"] and c["page"] >= 1 for c in d["citations"])
    streamed = "".join(c.choices[0].delta.content or "" for c in ask(server, LED, stream=True,
                                                                        response_format={"type": "json_object"})
                       if c.choices)
    assert json.loads(streamed)["answer"] == d["answer"]


SCHEMA = {"type": "json_schema", "json_schema": {"name": "region", "schema": {
    "type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}}}


def test_json_schema_without_a_chat_model_is_a_400_and_with_one_is_decoded_to_it(server) -> None:
    import json

    from chat_doubles import NotReentrantChat

    with pytest.raises(openai.BadRequestError) as e:
        ask(server, LED, response_format=SCHEMA)
    assert e.value.param == "response_format"
    seen = []

    def reply(r):
        seen.append(r)
        return '{"region": "South"}'

    models = server[1].state.engine.handle("s").models
    models.provide("chat", NotReentrantChat("schema-double", delay=0, reply=reply))
    try:
        resp = client(server).chat.completions.create(model="trident/s", messages=USER_LED, response_format=SCHEMA)
    finally:
        models.use_profile("chat", None)
    assert json.loads(resp.choices[0].message.content) == {"region": "South"}
    assert seen[-1].json_schema == SCHEMA["json_schema"]["schema"]  # guided decoding got the client's schema


@pytest.mark.parametrize("kw, param", [
    ({"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
      "tool_choice": "required"}, "tools"),
    ({"functions": [{"name": "get_weather", "parameters": {"type": "object"}}]}, "functions"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"response_format": {"type": "yaml"}}, "response_format"),
    ({"max_tokens": -5}, "max_tokens"),
])
def test_fields_that_cannot_be_honoured_are_a_400_naming_them(server, kw: dict, param: str) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        ask(server, LED, **kw)
    assert e.value.type == "invalid_request_error" and e.value.param == param


def test_malformed_body_is_a_400_not_a_422(server) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client(server).post("/chat/completions", body={"model": "trident/r"}, cast_to=object)
    assert e.value.param == "messages" and e.value.type == "invalid_request_error"


def test_too_long_input_is_context_length_exceeded_and_a_short_follow_up_is_answered(server) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        ask(server, "x" * 200_000)
    assert e.value.code == "context_length_exceeded"
    long = ("Please consider the wind report carefully. " * 90)[:3960] + " " + LED
    turns = [{"role": "user", "content": long}, {"role": "assistant", "content": "South [1]"},
             {"role": "user", "content": "And in 2022?"}]
    resp = client(server).chat.completions.create(model="trident/r", messages=turns)
    q = resp.model_extra["trident"]["question"]
    assert q.endswith("And in 2022?") and len(q) <= 4000 and "2,900 megawatts" in q


def test_stream_include_usage_sends_the_usage_chunk(server) -> None:
    chunks = list(ask(server, LED, stream=True, stream_options={"include_usage": True}))
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None and last.usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])
