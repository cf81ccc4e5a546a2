"""The model runtime, the Query, the reranker / answer registries and AskOptions.

A counting chat backend (registered like any other backend and named by a
profile file) proves that one `ask` -- xkg route, rerank, answer, verification --
builds ONE chat model, and that the "none" profile keeps every stage off it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from chat_doubles import backend_profile
from typer.testing import CliRunner

from trident_local.annotate import annotation_stage
from trident_local.cli import app
from trident_local.errors import TridentError
from trident_local.generate.ask import AskOptions, ask
from trident_local.generate.base import answer_names, get_answer_strategy
from trident_local.index import Index
from trident_local.models import registry
from trident_local.models.protocols import ChatRequest, ChatResult
from trident_local.models.runtime import Models
from trident_local.query import Query
from trident_local.rerank.base import get_reranker, register_reranker, reranker_names

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
HELIOS = "helios_annual_report_2023.pdf"
QUESTION = "What was the revenue of the Coastal region in 2023?"


class CountingChat:
    """A chat backend that counts its instances and records the tag of every request it serves."""

    instances: ClassVar[list[CountingChat]] = []
    supports_images = False
    supports_json_schema = True

    def __init__(self, name: str = "counting"):
        self.name = name
        self.tags: list[str] = []
        CountingChat.instances.append(self)

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        out = []
        for r in requests:
            self.tags.append(r.tag)
            if r.tag == "route":
                reply = {"query_class": "entity-level", "entities": ["Coastal", "2023"]}
            elif r.tag == "rerank":
                reply = {"thinking": "", "page_list": r.json_schema["properties"]["page_list"]["items"]["enum"][:1]}
            elif r.tag.startswith("answer"):
                reply = {"answer": "95.2"}
            else:  # a judge: the page supports the claim
                reply = {"verdict": "supported", "rationale": "Table 1 gives 95.2"}
            out.append(ChatResult(json.dumps(reply)))
        return out


@pytest.fixture
def counting_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A profile file naming the counting backend, registered for this test only."""
    return backend_profile(tmp_path, monkeypatch, "counting", CountingChat)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("runtime") / "ix"
    ix = Index.create(d)
    ix.doc_stages.append(annotation_stage(ix))  # the no-model annotation (config chat = "none")
    ix.add([SAMPLES / HELIOS], workers=1)
    return d


# -- one chat model per ask ---------------------------------------------------------------------------
def test_one_chat_model_across_pool_rerank_answer_and_verify(index_dir: Path, counting_profile: str) -> None:
    ix = Index.open(index_dir)
    ix.models.use_profile("chat", counting_profile)
    res = ask(ix, QUESTION, AskOptions(pool="xkg", rerank="annotated", answer="plain", verify=True))
    assert len(CountingChat.instances) == 1  # built once, used by every stage
    chat = CountingChat.instances[0]
    assert {"route", "rerank", "answer-plain", "verify.text"} <= set(chat.tags)
    assert sorted(ix.models.builds) == [("chat", counting_profile), ("embedder", "minilm")]  # each once
    assert res.route is not None and res.route["source"] == "model:counting"
    assert res.rerank["mode"] == "model:counting" and res.answer.mode == "plain:counting"
    check = res.answer.verification
    assert res.answer.text == "95.2" and check and check["claims"][0]["verdict"] == "supported"
    assert "verify" in res.timings


def test_cli_ask_xkg_builds_one_engine(index_dir: Path, counting_profile: str) -> None:
    res = CliRunner().invoke(
        app, ["ask", QUESTION, "--index", str(index_dir), "--pool", "xkg", "--profile", counting_profile, "--json", "-"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert len(CountingChat.instances) == 1 and data["route"]["source"] == "model:counting"


def test_profile_none_keeps_every_stage_off_the_chat_model(tmp_path: Path, counting_profile: str) -> None:
    from trident_local.config import Config

    ix = Index.create(tmp_path / "ix", Config(chat=counting_profile))
    ix.doc_stages.append(annotation_stage(ix, "none"))
    ix.add([SAMPLES / HELIOS], workers=1)
    ix.models.use_profile("chat", "none")  # what `trident ask --profile none` does
    res = ask(ix, QUESTION, AskOptions(pool="xkg", rerank="annotated"))
    assert CountingChat.instances == []
    assert res.route is not None and res.route["source"] == "no-model:cue-rules"
    assert res.rerank["mode"] == "no-model:fused-match" and res.answer.mode == "evidence-first (no model)"


# -- the runtime ----------------------------------------------------------------------------------------
def test_models_build_lazily_once_per_role_and_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []

    def slow(name: str = "x") -> Any:
        built.append(name)
        time.sleep(0.05)  # let the other threads reach the lock while the first one builds
        return object()

    monkeypatch.setitem(registry._FACTORIES, ("chat", "slow"), slow)
    monkeypatch.setattr("trident_local.models.profiles.load_profile", _profile_of("slow"))
    models = Models()
    assert models.chat is None and built == []  # no config: "none", nothing built
    models.use_profile("chat", "p1")
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(models.chat)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == ["p1"] and len({id(g) for g in got}) == 1
    assert models.get("chat", "p2") is not got[0] and built == ["p1", "p2"]
    assert models.get("chat", "none") is None and models.get("chat", "NONE") is None
    models.use_profile("chat", None)
    assert models.profile("chat") == "none"


def _profile_of(backend: str):
    from trident_local.models.profiles import ModelProfile

    return lambda name: ModelProfile(name=str(name), role="chat", backend=backend, weights="")


def test_runtimes_without_a_cache_share_the_process_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """No second engine by accident: a runtime made without ``cache`` (a pool opened on a bare store,
    a verifier's) gets the model another runtime built; one given its own cache builds its own."""
    from trident_local.config import Config
    from trident_local.models.runtime import ModelCache, default_cache

    built: list[str] = []
    monkeypatch.setitem(registry._FACTORIES, ("chat", "slow"), lambda name="x": built.append(name) or object())
    monkeypatch.setattr("trident_local.models.profiles.load_profile", _profile_of("slow"))
    a, b = Models(profiles={"chat": "p1"}), Models(Config(chat="p1"))
    assert a.cache is b.cache is default_cache()
    assert a.chat is b.chat and built == ["p1"]  # built once, by whichever asked first
    own = Models(profiles={"chat": "p1"}, cache=ModelCache())
    assert own.chat is not a.chat and built == ["p1", "p1"]


def test_models_injection() -> None:
    fake = CountingChat("fake")
    models = Models(overrides={"chat": fake})
    assert models.chat is fake and models.profile("chat") == "fake" and models.builds == []
    other = CountingChat("other")
    models.provide("chat", other, "my-profile")
    assert models.chat is other and models.get("chat", "fake") is fake
    models.use_profile("chat", "none")
    assert models.chat is None and not models.has("chat")


# -- the Query ------------------------------------------------------------------------------------------
class CountingEmbedder:
    """Wraps a real embedder and counts query-side encodes of the question (a line item's name, looked up
    for a question that may ask for one, is another query)."""

    def __init__(self, inner: Any):
        self.inner, self.name, self.dim = inner, "counting-embedder", inner.dim
        self.query_calls = 0

    def encode(self, texts: Sequence[str], *, kind: str = "passage", **kw: Any) -> np.ndarray:
        if kind == "query" and QUESTION in texts:
            self.query_calls += 1
        return self.inner.encode(texts, kind=kind, **kw)


@pytest.mark.parametrize("pool", ["rrf", "xkg"])
def test_the_question_is_embedded_once_per_ask(index_dir: Path, pool: str) -> None:
    ix = Index.open(index_dir)
    counting = CountingEmbedder(ix.models.embedder)
    ix.models.provide("embedder", counting)
    q = Query(QUESTION)
    res = ask(ix, q, AskOptions(pool=pool, rerank="annotated", answer="auto", verify=False))
    assert counting.query_calls == 1  # pool, fused reranker and evidence-first answer share q's vector
    assert res.answer.text == "95.2" and res.answer.citations[0].page == 2
    assert np.allclose(q.vector(counting), counting.inner.encode([QUESTION], kind="query")[0])
    assert counting.query_calls == 1


def test_query_fields() -> None:
    q = Query('How much did "Red Mesa" cost in 2023?')
    assert q.entities == ["Red Mesa", "2023"] and q.route is None
    assert q.question_type == "short-extractive" and q.answer_type == "numeric"
    assert Query.of(q) is q and Query.of("x").text == "x"
    from trident_local.query import Route

    q.route = Route("entity-level", ["Red Mesa"], "model:m")
    assert q.entities == ["Red Mesa"]  # the route's entities, for pool and reranker alike
    with pytest.raises(TridentError, match="must be text"):
        Query(3)  # type: ignore[arg-type]
    with pytest.raises(TridentError, match="probability"):
        Query("q", min_confidence=1.2)


# -- registries and options -----------------------------------------------------------------------------
def test_registries_resolve_and_list_names() -> None:
    from trident_local.generate.evidence_answer import EvidenceFirstAnswer
    from trident_local.generate.model_answer import AutoAnswer
    from trident_local.rerank.fused import FusedReranker
    from trident_local.rerank.model_rerank import ModelReranker

    assert reranker_names() == ["none", "annotated", "fused", "auto"]
    assert answer_names() == ["plain", "lenses", "auto", "evidence", "extractive"]
    chat = CountingChat("x")
    assert isinstance(get_reranker("annotated", chat), ModelReranker)
    assert isinstance(get_reranker("annotated", None), FusedReranker)  # no model: its no-model stand-in
    assert isinstance(get_answer_strategy("auto", chat), AutoAnswer)
    assert isinstance(get_answer_strategy("lenses", None), EvidenceFirstAnswer)
    with pytest.raises(TridentError, match="unknown reranker 'llm'; rerankers: none, annotated, fused"):
        get_reranker("llm")
    with pytest.raises(TridentError, match="answer strategies: plain, lenses, auto, evidence, extractive"):
        get_answer_strategy("poem")


def test_register_a_reranker_by_one_line() -> None:
    from trident_local.rerank import base
    from trident_local.rerank.pool_order import PoolOrder

    register_reranker("pool-top", "trident_local.rerank.pool_order:PoolOrder")
    try:
        assert "pool-top" in reranker_names() and AskOptions(rerank="pool-top").rerank == "pool-top"
        assert isinstance(get_reranker("pool-top"), PoolOrder)
    finally:
        base._REGISTRY.unregister("pool-top")
    assert "pool-top" not in reranker_names()


def test_ask_options_check_names_without_cli_flags() -> None:
    opts = AskOptions()
    assert (opts.pool, opts.rerank, opts.fields, opts.answer, opts.k_max, opts.verify) == (
        "fused", "auto", "full", "auto", None, True
    )
    for bad, match in (
        ({"pool": "nope"}, "unknown pool 'nope'; pools: bm25"),
        ({"rerank": "llm"}, "unknown reranker 'llm'"),
        ({"answer": "poem"}, "unknown answer strategy 'poem'"),
        ({"fields": "all"}, "unknown field switch 'all'"),
        ({"k_max": 0}, "k_max must be at least 1"),
    ):
        with pytest.raises(TridentError, match=match) as e:
            AskOptions(**bad)
        assert "--" not in str(e.value)


def test_dataset_adapters_registry(tmp_path: Path) -> None:
    from trident_local.evaluate.datasets import adapter_names, load_records

    path = tmp_path / "ds.json"
    path.write_text(json.dumps([{"doc_id": HELIOS, "question": "q?", "answer": "1", "evidence_pages": "[2]"}]))
    assert "mmlongbench" in adapter_names()
    assert [(r.doc_name, r.evidence_pages) for r in load_records(path)] == [(HELIOS, [2])]
    with pytest.raises(TridentError, match="unknown dataset adapter 'squad'; adapters: mmlongbench"):
        load_records(path, "squad")
