"""The "auto" reranker: the annotated rerank when the candidates' documents are annotated, else pool order."""

from __future__ import annotations

from pathlib import Path

from pdf_factory import rich_pdf

from trident_local.annotate import annotation_stage
from trident_local.generate.ask import ask
from trident_local.index import Index
from trident_local.rerank.auto import NO_MODEL_OFF, NOT_ANNOTATED, auto_choice


def test_auto_picks_the_annotated_rerank_only_for_annotated_documents(tmp_path: Path) -> None:
    plain = Index.create(tmp_path / "plain")
    plain.add([rich_pdf(tmp_path / "solar.pdf")], workers=1)
    annotated = Index.create(tmp_path / "annotated")
    annotated.doc_stages.append(annotation_stage(annotated))
    annotated.add([rich_pdf(tmp_path / "wind.pdf", topic="wind")], workers=1)
    (p,), (a,) = plain.store.doc_ids(), annotated.store.doc_ids()
    assert auto_choice(plain, {p}) == ("none", NOT_ANNOTATED)
    assert auto_choice(annotated, {a}) == ("none", NO_MODEL_OFF)  # no chat model: the no-model rerank is off
    assert auto_choice(annotated, set())[0] == "none"
    for idx, note in ((plain, NOT_ANNOTATED), (annotated, NO_MODEL_OFF)):  # no chat model: pool order, and why
        idx.models.use_profile("chat", "none")
        res = ask(idx, "Which region led with 2,900 megawatts?")  # the default is auto
        assert res.rerank == {"mode": "none", "k": res.rerank["k"], "note": note}


def test_auto_runs_the_annotated_rerank_where_it_is_on(tmp_path: Path, monkeypatch) -> None:
    from trident_local.rerank import auto

    annotated = Index.create(tmp_path / "annotated")
    annotated.doc_stages.append(annotation_stage(annotated))
    annotated.add([rich_pdf(tmp_path / "wind.pdf", topic="wind")], workers=1)
    (a,) = annotated.store.doc_ids()
    assert auto_choice(annotated, {a}, chat=object())[0] == "annotated"  # a chat model: the model rerank
    monkeypatch.setattr(auto, "NO_MODEL_RERANK", True)
    assert auto_choice(annotated, {a}, chat=None) == ("annotated", "")
    annotated.models.use_profile("chat", "none")
    res = ask(annotated, "Which region led with 2,900 megawatts?")
    assert res.rerank["mode"] == "no-model:fused-match" and "note" not in res.rerank
