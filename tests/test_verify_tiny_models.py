"""AtomCite's model path on tiny random-weight models: a tiny Llama as the text judge, a tiny Qwen2.5-VL as
the image judge (through profiles, the real transformers backend). Random weights write garbage: these
tests check plumbing and that garbage becomes recorded errors and conservative actions, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_models import tiny_chat_profile

from trident_local.config import Config
from trident_local.index import Index
from trident_local.verify.pipeline import Verifier
from trident_local.verify.types import JUDGE_VERDICTS

PAGES = [
    "The Aurora project started in 2011 in Oslo with a team of 14 engineers.",
    "Revenue of Zephyr Corp reached 4,250 million dollars in 2019.",
    "Ingrid Halvorsen was appointed chief executive of Zephyr Corp in March 2020.",
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    import pymupdf

    tmp = tmp_path_factory.mktemp("tiny_verify")
    pdf = pymupdf.open()
    for text in PAGES:
        pdf.new_page().insert_textbox(pymupdf.Rect(72, 72, 520, 300), text, fontsize=11)
    pdf.save(tmp / "facts.pdf")
    idx = Index.create(tmp / "idx", Config(pools=["bm25"], ocr="none", dpi=36))
    assert not idx.add([tmp / "facts.pdf"], workers=1).failed
    llama = tiny_chat_profile(tmp, "llama", max_batch_size=4)
    qwen = tiny_chat_profile(tmp, "qwen25vl", max_batch_size=4)
    return idx, llama, qwen, tmp


def check_conservative(report) -> None:
    for r in report.results:
        assert r.judgements, "each channel recorded a judgement"
        for j in r.judgements:
            assert j.verdict in (*JUDGE_VERDICTS, "unknown")
            if j.verdict == "unknown":
                assert j.error  # what went wrong is recorded
        if all(j.verdict == "unknown" for j in r.judgements):  # kept: flagged, or pointed at its located value
            assert r.verdict == "unknown"
            assert (r.action == "flag" and "unverified" in r.flags) or \
                (r.action in ("keep", "fix-region") and "region-supported" in r.flags and r.regions)
        assert r.action in ("keep", "fix-region", "fix-page", "remove", "flag")


def test_tiny_llama_text_and_tiny_qwen_image_judges(setup) -> None:
    idx, llama, qwen, _ = setup
    v = Verifier.from_index(idx, text=llama, image=qwen, window=1, batch_size=3, max_tokens=24)
    assert set(v.judges) == {"text", "image"}
    rep = v.verify("Aurora started in 2011 [p. 1]. Zephyr earned 4,250 million [p. 2]. Halvorsen leads [p. 3].",
                   "facts.pdf")
    assert len(rep.results) == 3 and {j.channel for r in rep.results for j in r.judgements} == {"text", "image"}
    check_conservative(rep)
    assert rep.model_calls >= 6  # 3 pairs x 2 channels, plus any window pages
    json.dumps(rep.to_dict())  # the report serializes


def test_tiny_vlm_serves_both_channels_with_same(setup) -> None:
    idx, _, qwen, _ = setup
    v = Verifier.from_index(idx, text=qwen, image="same", window=1, max_tokens=24)
    assert v.image_judge is not None and v.image_judge.model is v.text_judge.model
    rep = v.verify({"claims": [{"text": "Aurora started in 2011.", "pages": [1, 3]}]}, "facts")
    assert len(rep.results) == 2
    check_conservative(rep)


def test_tiny_models_through_the_citation_benchmark(setup) -> None:
    from trident_local.evaluate.citations_build import build_from_index
    from trident_local.evaluate.citations_run import run_citations

    idx, llama, qwen, tmp = setup
    data = [{"doc_id": "facts.pdf", "question": "How many engineers joined Aurora?", "answer": "14",
             "evidence_pages": "[1]", "answer_format": "Int", "evidence_sources": "['Pure-text']"},
            {"doc_id": "facts.pdf", "question": "Who leads Zephyr Corp?", "answer": "Ingrid Halvorsen",
             "evidence_pages": "[3]", "answer_format": "Str", "evidence_sources": "['Pure-text']"},
            {"doc_id": "other.pdf", "question": "Who?", "answer": "Bob", "evidence_pages": "[1]",
             "answer_format": "Str", "evidence_sources": "[]"}]
    (tmp / "data.json").write_text(json.dumps(data), encoding="utf-8")
    inst, summ = build_from_index(tmp / "data.json", idx, calib_fraction=0.0)
    assert summ.instances == 6
    res = run_citations(idx, inst, text=llama, image=qwen, window=1, n_boot=50, batch_size=4,
                        max_tokens=24)
    assert res["counts"]["instances"] == 6 and res["model_calls"] >= 12
    assert res["precision_before"] == pytest.approx(1 / 3)
    assert res["config"]["no_model_scorer"] is None and set(res["config"]["judges"]) == {"text", "image"}
    assert all(o["action"] in ("keep", "fix-page", "remove", "flag") for o in res["outcomes"])
    assert Path(llama).is_file()
