"""The xKG pool: query routing (model and rules), per-axis concept scores, page scores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from tiny_models import tiny_chat_profile

from trident_local.annotate import annotation_stage, load
from trident_local.annotate.concept_match import match_concepts
from trident_local.errors import ModelOutputError, TridentError
from trident_local.index import Index
from trident_local.models.profiles import build_model
from trident_local.models.protocols import ChatRequest, ChatResult
from trident_local.query import ALPHA, Query
from trident_local.retrieve.router import parse_route, route, rule_route
from trident_local.retrieve.xkg import XKGPool

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


class ScriptedChat:
    name = "scripted"
    supports_images = False
    supports_json_schema = True

    def __init__(self, text: str):
        self.text = text

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        return [ChatResult(self.text) for _ in requests]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    ix = Index.create(tmp_path_factory.mktemp("idx") / "ix")
    ix.doc_stages.append(annotation_stage(ix))
    ix.add([SAMPLES], workers=1)
    return ix


@pytest.mark.parametrize(
    ("question", "cls"),
    [
        ("What was the revenue of the Coastal region in 2023?", "entity-level"),
        ("How many megawatts were connected?", "entity-level"),
        ("What does the conclusion section say?", "structural"),
        ("What is on the last page of Section 3?", "mixed"),
        ("why does fusion help evidence retrieval", "topical"),
    ],
)
def test_rule_route(question: str, cls: str) -> None:
    assert rule_route(question).query_class == cls


def test_rule_route_entities() -> None:
    r = rule_route('How much did "Red Mesa" cost in 2023, per Table 1?')
    assert r.entities == ["Red Mesa", "2023", "Table 1"] and r.source == "no-model:cue-rules"
    assert set(ALPHA) == {"topical", "entity-level", "structural", "mixed"}
    assert all(set(a) == {"T", "E", "S"} for a in ALPHA.values())


def test_model_route_and_fallbacks(tmp_path: Path) -> None:
    r = route("q?", ScriptedChat('{"query_class": "structural", "entities": ["Table 2", 7, " "]}'))
    assert (r.query_class, r.entities, r.source) == ("structural", ["Table 2"], "model:scripted")
    r = route("What about 2023?", ScriptedChat('{"query_class": "geographic", "entities": []}'))
    assert r.source == "no-model:cue-rules" and "unusable" in r.error and r.entities == ["2023"]
    with pytest.raises(ModelOutputError):
        parse_route("nothing")
    tiny = build_model("chat", tiny_chat_profile(tmp_path, "llama"))
    r = route("What was the revenue in 2023?", tiny)  # garbage -> rules
    assert r.query_class in ALPHA and (r.source.startswith("model:") or r.error)


def test_concept_scores_and_axes(index: Index) -> None:
    d = index.resolve("helios_annual_report_2023.pdf")
    la = load(index.store, d)
    emb = build_model("embedder", "minilm")
    m = match_concepts(la, emb.encode(["revenue by region"], kind="query")[0], ["Coastal", "2023"], top_n=1)
    ann = la.annotation
    for kind in "TES":  # top_n = 1: at most one concept per axis scores
        assert sum(1 for c, s in zip(ann.concepts, m.scores, strict=True) if c.kind == kind and s > 0) <= 1
    assert np.all(m.scores >= 0)
    s_axis = m.axis_page_scores("S")
    assert s_axis.shape == (3,) and s_axis.max() > 0
    tags = m.hits(int(np.argmax(s_axis)) + 1)
    assert tags and tags[0][0].startswith(("T:", "E:", "S:"))


def test_xkg_retrieve(index: Index) -> None:
    q = Query("What was the revenue of the Coastal region in 2023?")
    hits = index.search(q, pool="xkg", k=20)
    assert hits and hits[0].pool == "xkg" and all(h.score > 0 for h in hits)
    assert hits[0].page == 2 and index.store.document(hits[0].doc_id).file_name.startswith("helios")
    pool = index.pool("xkg")
    assert q.route is not None and q.route.query_class == "entity-level"  # the pool routed the Query
    one = index.search("recall of the fused ranking", pool="xkg", doc="sparse_page_retrieval.pdf", k=2)
    assert len(one) <= 2 and {h.doc_id for h in one} == {index.resolve("sparse_page_retrieval.pdf")}
    pool.build()
    assert not pool.is_stale()


def test_xkg_needs_annotation(tmp_path: Path) -> None:
    ix = Index.create(tmp_path / "plain")
    ix.add([SAMPLES / "helios_annual_report_2023.pdf"], workers=1)
    with pytest.raises(TridentError, match="trident annotate"):
        XKGPool(ix.store).retrieve("revenue", doc_ids=ix.store.doc_ids())
    assert XKGPool(ix.store).retrieve("revenue") == []  # nothing annotated: nothing to search
