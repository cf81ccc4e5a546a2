"""Annotation with the no-model strategies: records, T/E/S concepts, cache files, resumable stage."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trident_local.annotate import STAGE, annotate_index, annotation_stage, has_annotation, load
from trident_local.annotate.bundles import entity_bundles
from trident_local.annotate.captions import object_caption
from trident_local.annotate.entities import loose_match, overlap_score, rank_entities
from trident_local.annotate.topics import n_topics, window_size
from trident_local.index import Index
from trident_local.text import Entity, pattern_entities

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    ix = Index.create(tmp_path_factory.mktemp("idx") / "ix")
    ix.doc_stages.append(annotation_stage(ix))  # what `trident index --annotate` does
    ix.add([SAMPLES], workers=1)
    return ix


def helios(ix: Index) -> str:
    return ix.resolve("helios_annual_report_2023.pdf")


def test_pattern_entities_types() -> None:
    text = (
        "In 2015, Pew Research Center found that 5% of Latinos earned $4.2 billion (see Table 3). "
        "Revenue was 12,345 on 12 March 2020."
    )
    got = {(e.type, e.text) for e in pattern_entities(text)}
    assert {
        ("date", "2015"),
        ("name", "Pew Research Center"),
        ("percent", "5%"),
        ("name", "Latinos"),
        ("money", "$4.2 billion"),
        ("ref", "Table 3"),
        ("number", "12,345"),
        ("date", "12 March 2020"),
    } <= got


def test_rank_entities_keeps_top_15_by_salience() -> None:
    common = Entity("Acme", "name")
    pages = [[common, *[Entity(f"{i}{j}0", "number") for j in range(20)]] for i in range(1, 4)]
    top = rank_entities(pages)
    assert all(len(t) == 15 for t in top)
    assert all(common not in t[:5] for t in top)  # on every page: least salient


def test_loose_entity_overlap() -> None:
    assert loose_match("Pew Research Center", "pew research")
    assert loose_match("$4,200", "$4200")
    assert not loose_match("5%", "15%") and loose_match("5%", "5%")  # short strings need equality
    assert overlap_score(["Coastal", "2023"], ["Coastal region", "2023", "Desert"]) == pytest.approx(2 / 3)
    assert overlap_score([], ["a", "b"]) == 0.0


def test_topic_window_rule() -> None:
    assert window_size(256) == (196, 98)  # MiniLM reads 256 word pieces: never a longer window
    assert window_size(8192) == (393, 196)  # a long-context embedder: 512 tokens
    assert [n_topics(n) for n in (0, 3, 16, 800)] == [0, 1, 2, 64]


def test_bundles_have_two_or_more_entities_and_share_weights() -> None:
    a, b, c, d = (Entity(x, "name") for x in ("Alpha Corp", "Beta Inc", "Gamma", "Delta Group"))
    pages = [[a, b], [a, b, c], [d], [c, d], [a, b], [], [], []]
    bundles = entity_bundles(pages, [1, 2, 3, 4, 5, 6, 7, 8])
    assert bundles and all(len(bd.members) >= 2 for bd in bundles)
    ab = next(bd for bd in bundles if set(bd.members) >= {"Alpha Corp", "Beta Inc"})
    assert ab.weights[1] == pytest.approx(2 / len(ab.members))  # share of the bundle's entities on the page


def test_document_annotation_records_and_concepts(index: Index) -> None:
    store = index.store
    d = helios(index)
    assert store.manifest.documents[d].stages[STAGE]
    la = load(store, d)
    ann = la.annotation
    assert [p.page for p in ann.pages] == [1, 2, 3]
    p2 = ann.page(2)
    assert p2.section == "Financial Results" and p2.visual.startswith("Table 1")
    assert len(p2.entities) <= 15 and len(p2.snippet) <= 600 and "Coastal" in p2.snippet
    assert ann.strategies["caption"] == "no-model:detected-objects"
    assert ann.strategies["entities"] == "no-model:pattern-rules"
    assert ann.strategies["names"] == "no-model:top-terms"
    kinds = {c.kind for c in ann.concepts}
    assert kinds == {"T", "E", "S"}
    for c in ann.concepts:
        assert c.weights and all(0 < w <= 1 for w in c.weights.values())
        if c.kind == "T":  # share of the topic's windows per page
            assert sum(c.weights.values()) == pytest.approx(1.0)
        if c.kind == "E":
            assert len(c.members) >= 2
    sections = {c.name: c for c in ann.concepts_of("S")}
    assert sections["Financial Results"].weights == {2: 1.0}
    n_vec = len(ann.concepts_of("T")) + len(ann.concepts_of("S"))
    assert la.concept_vecs.shape == (n_vec, 384)
    assert la.field_vecs.shape == (3, 4, 384)
    norms = np.linalg.norm(la.field_vecs, axis=2)
    assert np.all((np.abs(norms - 1) < 1e-2) | (norms == 0))


def test_annotation_json_is_the_cache(index: Index) -> None:
    d = helios(index)
    js = index.store.doc_dir(d) / "annotation.json"
    data = json.loads(js.read_text())
    assert data["doc_id"] == d and data["version"] == 1 and len(data["pages"]) == 3


def test_annotate_index_resumes_and_forces(index: Index) -> None:
    rep = annotate_index(index)
    assert rep.annotated == [] and len(rep.skipped) == 2
    d = helios(index)
    index.store.mark(d, STAGE, False)  # killed after saving, before the stage was recorded:
    rep = annotate_index(index)  # the saved annotation (same profiles) is kept, the stage marked
    assert rep.annotated == [] and d in rep.skipped and index.store.manifest.documents[d].stages[STAGE]
    index.store.mark(d, STAGE, False)
    (index.store.doc_dir(d) / "annotation.json").unlink()  # killed before saving: redone
    rep = annotate_index(index)
    assert rep.annotated == [d] and rep.pages == 3
    rep = annotate_index(index, force=True, docs=["sparse_page_retrieval.pdf"])
    assert len(rep.annotated) == 1 and has_annotation(index.store, rep.annotated[0])


def test_caption_from_objects(index: Index) -> None:
    doc = index.store.document(helios(index))
    cap = object_caption(doc.page(2))
    assert "Table 1" in cap and "Revenue by region" in cap and len(cap.split()) <= 61
