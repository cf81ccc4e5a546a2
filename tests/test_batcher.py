"""Sharing one chat engine between threads: the batcher (one thread, merged batches) for a backend
that cannot batch across callers, and the routing that gives a service vLLM's async engine instead."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest
from chat_doubles import NotReentrantChat

from trident_local.models.batcher import BatchingChat, BatchPolicy
from trident_local.models.profiles import backend_options, load_profile
from trident_local.models.protocols import ChatRequest, ChatResult, Message
from trident_local.models.runtime import ModelCache, Models


class SlowEngine(NotReentrantChat):
    """Fails a call that carries the request ``fail_on``, as a dying engine would."""

    def __init__(self, delay: float = 0.05, fail_on: str = ""):
        super().__init__("slow", delay)
        self.fail_on = fail_on

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if self.fail_on and self.fail_on in [r.messages[0].text() for r in requests]:
            raise RuntimeError("engine died")
        return super().chat(requests)


def req(text: str) -> ChatRequest:
    return ChatRequest([Message("user", text)])


def test_concurrent_callers_get_their_own_results_from_merged_batches() -> None:
    engine = SlowEngine()
    chat = BatchingChat(engine)
    callers = 16

    def ask(i: int) -> list[str]:
        return [r.text for r in chat.chat([req(f"q{i}a"), req(f"q{i}b")])]

    with ThreadPoolExecutor(callers) as pool:
        out = list(pool.map(ask, range(callers)))
    chat.close()
    assert out == [[f"Q{i}A", f"Q{i}B"] for i in range(callers)]  # each caller its own, in order
    assert len(engine.threads) == 1  # one dispatcher thread talks to the engine
    assert sum(engine.batches) == 2 * callers
    assert len(engine.batches) < callers and max(engine.batches) > 2  # callers were merged
    assert chat.stats.requests == 2 * callers and chat.stats.callers == callers
    assert chat.stats.mean_batch > 2


def test_a_lone_caller_does_not_wait() -> None:
    engine = SlowEngine(delay=0.0)
    chat = BatchingChat(engine, BatchPolicy(max_wait_ms=0))
    assert [r.text for r in chat.chat([req("x")])] == ["X"]
    assert engine.batches == [1]
    chat.close()


def test_max_batch_is_respected_and_callers_are_never_split() -> None:
    engine = SlowEngine(delay=0.02)
    chat = BatchingChat(engine, BatchPolicy(max_batch=4))
    with ThreadPoolExecutor(8) as pool:
        out = list(pool.map(lambda i: [r.text for r in chat.chat([req(f"{i}.{j}") for j in range(3)])], range(8)))
    chat.close()
    assert out == [[f"{i}.{j}" for j in range(3)] for i in range(8)]
    assert max(engine.batches) <= 4 and all(b % 3 == 0 for b in engine.batches)


def test_an_engine_error_fails_only_its_batch_and_the_dispatcher_lives_on() -> None:
    engine = SlowEngine(delay=0.0, fail_on="boom")
    chat = BatchingChat(engine)
    with pytest.raises(RuntimeError, match="engine died"):
        chat.chat([req("boom")])
    assert [r.text for r in chat.chat([req("ok")])] == ["OK"]
    chat.close()
    with pytest.raises(RuntimeError, match="closed"):
        chat.chat([req("late")])


def test_a_model_cache_shares_one_batched_engine_between_runtimes(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []

    def fake_build(role: str, profile: str, **_: object) -> SlowEngine:
        built.append(profile)
        return SlowEngine(delay=0.0)

    monkeypatch.setattr("trident_local.models.runtime.build_model", fake_build)
    sizes: list[tuple[str, int]] = []
    cache = ModelCache(concurrent={"chat": BatchPolicy()}, on_batch=lambda role, n: sizes.append((role, n)))
    a = Models(profiles={"chat": "p"}, cache=cache)
    b = Models(profiles={"chat": "p"}, cache=cache)
    assert a.chat is b.chat and isinstance(a.chat, BatchingChat) and built == ["p"]
    assert a.chat.supports_json_schema and a.chat.delay == 0.0  # the engine's attributes show through
    a.chat.chat([req("x")])
    assert sizes == [("chat", 1)] and a.builds == b.builds == [("chat", "p")]
    cache.close()


class SelfBatching(SlowEngine):
    """A backend that takes many threads at once and batches them itself (as vLLM's async engine)."""

    concurrent = True
    on_request = None


def test_a_service_cache_runs_a_vllm_profile_on_the_async_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    backends: list[object] = []

    def fake_build(role: str, profile: str, **options: object) -> SlowEngine:
        backends.append(options.get("backend"))
        return SelfBatching(delay=0.0) if options.get("backend") == "vllm-async" else SlowEngine(delay=0.0)

    monkeypatch.setattr("trident_local.models.runtime.build_model", fake_build)
    sizes: list[tuple[str, int]] = []
    service = ModelCache(concurrent={"chat": BatchPolicy()}, on_batch=lambda role, n: sizes.append((role, n)))
    chat = Models(profiles={"chat": "smollm2-135m-instruct-vllm"}, cache=service).chat
    assert backends == ["vllm-async"]
    assert not isinstance(chat, BatchingChat)  # nothing of ours between the callers and the engine
    assert chat.inner.on_request is not None  # its in-engine counts reach the service's metrics
    chat.inner.on_request(3)
    assert sizes == [("chat", 3)]
    # the same profile outside a service (a CLI run): the offline engine, no batcher
    plain = Models(profiles={"chat": "smollm2-135m-instruct-vllm"}, cache=ModelCache()).chat
    assert backends[-1] is None and not isinstance(plain, BatchingChat)
    # a backend without a concurrent form (in-process transformers) in a service: the batcher
    hf = replace(load_profile("smollm2-135m-instruct-vllm"), name="smollm2-hf", backend="transformers")
    batched = Models(profiles={"chat": hf}, cache=service).chat
    assert backends[-1] is None and isinstance(batched, BatchingChat)


def test_the_async_backend_reads_the_vllm_options_table() -> None:
    p = replace(load_profile("smollm2-135m-instruct-vllm"), options={"vllm": {"max_num_seqs": 4}, "seed": 1})
    assert backend_options(replace(p, backend="vllm-async")) == backend_options(p) == {"max_num_seqs": 4, "seed": 1}
