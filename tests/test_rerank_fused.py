"""The no-model reranker: fused field matches over the same records, adaptive K, field switches."""

from __future__ import annotations

from pathlib import Path

import pytest

from trident_local.annotate import annotation_stage
from trident_local.errors import TridentError
from trident_local.index import Index
from trident_local.rerank import FIELD_SETS, NO_MODEL, rerank_pool
from trident_local.rerank.fields import field_set
from trident_local.rerank.gate import adaptive_k

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    ix = Index.create(tmp_path_factory.mktemp("idx") / "ix")
    ix.doc_stages.append(annotation_stage(ix))
    ix.add([SAMPLES], workers=1)
    return ix


@pytest.mark.parametrize(
    ("scores", "k_max", "expected"),
    [
        ([3.0, 1.0, 0.9, 0.8, 0.7, 0.6], 5, 1),  # a clear winner stands alone
        ([3.0, 2.9, 1.0, 0.9, 0.8, 0.7], 5, 2),
        ([1.0, 0.75, 0.5, 0.25, 0.0, -0.25], 5, 1),  # equal drops: the first (argmax is stable)
        ([1.0, 0.95, 0.9, 0.85, 0.8, 0.1], 5, 5),  # the drop after the fifth
        ([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 5, 5),  # no drop at all: K_max
        ([2.0, 1.0], 5, 1),
        ([2.0], 5, 1),
        ([], 5, 0),
    ],
)
def test_adaptive_k(scores: list[float], k_max: int, expected: int) -> None:
    assert adaptive_k(scores, k_max) == expected


def test_field_switches() -> None:
    assert field_set("full") == ("concept_hits", "section", "visual", "entities", "text")
    assert field_set("caption-only") == ("visual",) and field_set("snippet-only") == ("text",)
    assert "visual" not in field_set("drop-caption") and "entities" not in field_set("drop-entities")
    assert "concept_hits" not in field_set("drop-concepts")
    with pytest.raises(TridentError):
        field_set("everything")


@pytest.mark.parametrize("fields", list(FIELD_SETS))
def test_no_model_rerank_every_switch(index: Index, fields: str) -> None:
    q = "What was the revenue of the Coastal region in 2023?"
    hits = index.search(q, pool="rrf", k=20)
    res = rerank_pool(index, q, hits, fields=fields, k_max=5)
    assert res.mode == NO_MODEL and 1 <= res.k <= 5 and not res.fallback
    assert len(res.scores) == len(hits) and len(res.records) == len(hits)
    assert {h.key for h in res.hits} <= {h.key for h in hits}
    best = max(res.scores, key=res.scores.get)
    assert res.records[[r.page_id for r in res.records].index(best)].page == res.hits[0].page


def test_records_carry_annotation_and_concept_hits(index: Index) -> None:
    q = "revenue by region table"
    hits = index.search(q, pool="bm25", doc="helios_annual_report_2023.pdf", k=20)
    res = rerank_pool(index, q, hits)
    rec = next(r for r in res.records if r.page == 2)
    assert rec.page_id == "p2" and rec.visual.startswith("Table 1") and rec.section == "Financial Results"
    assert 0 < len(rec.concept_hits) <= 6 and all(t[:2] in ("T:", "E:", "S:") for t in rec.concept_hits)
    assert rec.prompt_view(("visual",)).keys() == {"page_id", "retriever_score", "visual"}
    assert res.hits[0].page == 2


def test_unannotated_document_is_a_clear_error(tmp_path: Path) -> None:
    ix = Index.create(tmp_path / "plain")
    ix.add([SAMPLES / "helios_annual_report_2023.pdf"], workers=1)
    hits = ix.search("revenue", pool="bm25", k=3)
    with pytest.raises(TridentError, match="trident annotate"):
        rerank_pool(ix, "revenue", hits)
    assert rerank_pool(ix, "revenue", []).hits == []
