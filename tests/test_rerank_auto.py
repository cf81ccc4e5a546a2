"""The "auto" reranker: the annotated rerank when the candidates' documents are annotated, else pool order."""

from __future__ import annotations

from pathlib import Path

from pdf_factory import rich_pdf

from trident_local.annotate import annotation_stage
from trident_local.generate.ask import AskOptions, ask
from trident_local.index import Index
from trident_local.rerank.auto import auto_choice


def test_auto_picks_the_annotated_rerank_only_for_annotated_documents(tmp_path: Path) -> None:
    plain = Index.create(tmp_path / "plain")
    plain.add([rich_pdf(tmp_path / "solar.pdf")], workers=1)
    annotated = Index.create(tmp_path / "annotated")
    annotated.doc_stages.append(annotation_stage(annotated))
    annotated.add([rich_pdf(tmp_path / "wind.pdf", topic="wind")], workers=1)
    (p,), (a,) = plain.store.doc_ids(), annotated.store.doc_ids()
    assert auto_choice(plain, {p}) == "none" and auto_choice(annotated, {a}) == "annotated"
    assert auto_choice(annotated, set()) == "none"
    for idx, mode in ((plain, "none"), (annotated, "no-model")):  # no chat model: the annotated rerank's stand-in
        idx.models.use_profile("chat", "none")
        res = ask(idx, "Which region led with 2,900 megawatts?", AskOptions(rerank="auto"))
        assert res.rerank["mode"].startswith(mode), res.rerank
