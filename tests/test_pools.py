"""bm25, dense and rrf pools on a small generated index (real MiniLM embedder)."""

from __future__ import annotations

import pytest
from pdf_factory import rich_pdf, text_pdf

from trident_local.index import Index
from trident_local.retrieve.base import Hit
from trident_local.retrieve.rrf import rrf_fuse


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Index:
    d = tmp_path_factory.mktemp("pools")
    rich_pdf(d / "solar.pdf", topic="solar")
    text_pdf(d / "zoo.pdf", ["The zoo keeps four giraffes and two elephants.",
                             "Penguin feeding happens at noon near the aquarium.",
                             "Ticket prices rose to 18 euros for adults in 2022."])
    idx = Index.create(d / "idx")
    report = idx.add([d / "solar.pdf", d / "zoo.pdf"], workers=1)
    assert not report.failed
    return idx


@pytest.mark.parametrize("pool", ["bm25", "dense", "rrf", "fused"])
def test_pool_finds_the_page_within_a_document(index: Index, pool: str) -> None:
    hits = index.search("When is penguin feeding?", pool=pool, doc="zoo.pdf", k=3)
    assert hits[0].page == 2 and all(h.doc_id == index.resolve("zoo") for h in hits)
    assert len(hits) == 3 and hits[0].score >= hits[1].score >= hits[2].score


@pytest.mark.parametrize("pool", ["bm25", "dense", "rrf", "fused"])
def test_pool_over_the_whole_index(index: Index, pool: str) -> None:
    hits = index.search("capacity by region table North South", pool=pool, k=20)
    assert (index.resolve("solar.pdf"), 2) == hits[0].key
    assert len(hits) == 6  # all pages of both documents, no duplicates
    assert len({h.key for h in hits}) == 6


def test_rrf_fusion_by_hand() -> None:
    a = [Hit("d", 1, 9.0), Hit("d", 2, 5.0), Hit("d", 3, 1.0)]
    b = [Hit("d", 3, 0.9), Hit("d", 1, 0.8)]
    fused = {h.page: h.score for h in rrf_fuse([a, b])}
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2] == pytest.approx(1 / 62)
    assert [h.page for h in rrf_fuse([a, b])] == [1, 3, 2]


def test_empty_question_and_unknown_doc(index: Index) -> None:
    from trident_local.errors import TridentError

    with pytest.raises(TridentError, match="empty"):
        index.search("  ", pool="bm25")
    with pytest.raises(TridentError, match="no document"):
        index.search("x", pool="bm25", doc="nope.pdf")
    with pytest.raises(TridentError, match="unknown pool"):
        index.search("x", pool="magic")


def test_pools_rebuild_after_remove(index: Index, tmp_path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(index.store.root, copy)
    idx = Index.open(copy)
    idx.remove("zoo.pdf")
    hits = idx.search("penguin feeding", pool="rrf", k=20)
    assert {h.doc_id for h in hits} == {idx.resolve("solar")}
