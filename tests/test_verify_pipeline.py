"""AtomCite end to end on a generated PDF: judges (scripted, malformed output), the no-model scorer,
the pipeline's window search at document edges, and the `trident verify` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trident_local.config import Config
from trident_local.errors import ModelOutputError, TridentError
from trident_local.index import Index
from trident_local.models.protocols import ChatResult, ImagePart
from trident_local.models.structured import parse_object
from trident_local.verify.judge_common import JudgeItem, StorePages
from trident_local.verify.judge_image import VLMImageJudge
from trident_local.verify.judge_text import LLMTextJudge, NoModelSupportScorer
from trident_local.verify.model_json import parse_verdict
from trident_local.verify.pipeline import Verifier
from trident_local.verify.types import Judgement

PAGES = [
    "The Aurora project started in 2011 in Oslo with a team of 14 engineers.",
    "Revenue of Zephyr Corp reached 4,250 million dollars in 2019, driven by cloud services.",
    "This page discusses general background on weather patterns and seasonal rainfall.",
    "The Falcon telescope has a primary mirror of 6.5 meters and observes infrared light.",
    "Appendix tables list the survey questionnaire and the sampling frame of households.",
    "Ingrid Halvorsen was appointed chief executive of Zephyr Corp in March 2020.",
    "",  # a page without text (no OCR in this index)
]


def make_pdf(path: Path, pages: list[str]) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for i, text in enumerate(pages, 1):
        page = doc.new_page()
        if text:
            page.insert_text((72, 72), f"Section {i}", fontsize=14)
            page.insert_textbox(pymupdf.Rect(72, 100, 520, 400), text, fontsize=11)
        else:
            page.draw_rect(pymupdf.Rect(100, 100, 300, 300), color=(0, 0, 1), fill=(0.5, 0.5, 1))
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    tmp = tmp_path_factory.mktemp("verify")
    pdf = make_pdf(tmp / "facts.pdf", PAGES)
    idx = Index.create(tmp / "idx", Config(pools=["bm25"], ocr="none"))
    rep = idx.add([pdf], workers=1)
    assert not rep.failed
    return idx


@pytest.fixture(scope="module")
def doc_id(index: Index) -> str:
    return index.resolve("facts.pdf")


# -- untrusted model output ------------------------------------------------------------------------
def test_json_extraction_and_verdict_parsing() -> None:
    assert parse_object('{"verdict": "supported"}') == ({"verdict": "supported"}, [])
    assert parse_object('```json\n{"verdict": "partial"}\n```') == ({"verdict": "partial"}, ["fence"])
    assert parse_object('Sure! {"verdict": "x", "r": "a } b"} trailing {')[0]["r"] == "a } b"
    assert parse_object('no {"a": {"b": 1}} more')[0] == {"a": {"b": 1}}
    for bad in ["", "   ", "no json here", '{"verdict": "supported"', "[1, 2]", "{'verdict': 'supported'}"]:
        with pytest.raises(ModelOutputError):
            parse_object(bad)
    assert parse_verdict('{"verdict": "Supported", "rationale": "says so"}') == ("supported", "says so", None)
    assert parse_verdict('{"verdict": "not_supported"}')[0] == "unsupported"
    assert parse_verdict('{"verdict": "Partially supported"}')[0] == "partial"
    v, _, err = parse_verdict('{"verdict": "probably", "rationale": "hmm"}')
    assert v == "unknown" and "unknown verdict" in err
    v, _, err = parse_verdict('{"verdict": ["supported"]}')
    assert v == "unknown" and err
    v, _, err = parse_verdict("The claim is supported.")
    assert v == "unknown" and "unparseable" in err
    assert len(parse_verdict('{"verdict": "supported", "rationale": "' + "x" * 900 + '"}')[1]) == 400


class ScriptedModel:
    """A ChatModel that replays scripted replies; an Exception in the script makes that whole batch raise."""

    name = "scripted"
    supports_json_schema = False

    def __init__(self, script, images: bool = False):
        self.script = list(script)
        self.supports_images = images
        self.requests = []

    def chat(self, requests):
        self.requests += list(requests)
        out = []
        for _ in requests:
            item = self.script.pop(0)
            if isinstance(item, Exception):
                raise item
            out.append(item if isinstance(item, ChatResult) else ChatResult(item))
        return out


def test_chat_judge_survives_malformed_and_failed_calls(index: Index, doc_id: str) -> None:
    pages = StorePages(index.store)
    script = [
        '{"verdict": "supported", "rationale": "page says 2011"}',
        '```json\n{"verdict": "unsupported", "rationale": "no"}\n```',
        ChatResult("", error="CUDA out of memory"),
        '{"verdict": "maybe"}',
        RuntimeError("server went away"),  # the third batch (items 5-6) fails as a whole
        "Here you go: {\"verdict\": \"partial\", \"rationale\": \"half\"} thanks",
        '{"verdict": "supported", "rationale": "truncated',
    ]
    judge = LLMTextJudge(ScriptedModel(script), pages, batch_size=2)
    items = [JudgeItem("Aurora started in 2011.", doc_id, p) for p in (1, 2, 3, 4, 5, 6)]
    items += [JudgeItem("x", doc_id, 1), JudgeItem("y", doc_id, 2), JudgeItem("z", doc_id, 7)]
    out = judge.judge(items)
    assert [o.verdict for o in out] == ["supported", "unsupported", "unknown", "unknown", "unknown", "unknown",
                                        "partial", "unknown", "unknown"]
    assert out[0].rationale == "page says 2011" and out[0].error is None and out[0].channel == "text"
    assert "CUDA" in out[2].error and "unknown verdict" in out[3].error
    assert "server went away" in out[4].error and "server went away" in out[5].error
    assert "no text" in out[8].error  # page 7 has no text: the model is not asked
    assert judge.calls == 8 and [o.page for o in out] == [1, 2, 3, 4, 5, 6, 1, 2, 7]
    assert "Page 1 text:" in judge.model.requests[0].messages[-1].content
    assert judge.model.requests[0].json_schema["properties"]["verdict"]["enum"] == [
        "supported", "partial", "unsupported"]


def test_chat_judge_wrong_result_count_is_an_error_for_that_batch(index: Index, doc_id: str) -> None:
    class Short(ScriptedModel):
        def chat(self, requests):
            return [ChatResult('{"verdict": "supported"}')]

    judge = LLMTextJudge(Short([]), StorePages(index.store), batch_size=4)
    out = judge.judge([JudgeItem("a", doc_id, 1), JudgeItem("b", doc_id, 2)])
    assert [o.verdict for o in out] == ["unknown", "unknown"] and "1 results for 2" in out[0].error


def test_image_judge_sends_the_rendered_page(index: Index, doc_id: str) -> None:
    pages = StorePages(index.store)
    with pytest.raises(TridentError, match="vision-language"):
        VLMImageJudge(ScriptedModel([]), pages)
    model = ScriptedModel(['{"verdict": "supported", "rationale": "figure"}'] * 2, images=True)
    out = VLMImageJudge(model, pages).judge([JudgeItem("c", doc_id, 7), JudgeItem("c", doc_id, 99)])
    assert out[0].verdict == "supported" and out[0].channel == "image"
    assert out[1].verdict == "unknown" and "could not prepare" in out[1].error  # no page 99: this item only
    img = [p for p in model.requests[0].messages[-1].parts() if isinstance(p, ImagePart)][0]
    assert Path(img.path).is_file() and img.path.endswith(".png")


# -- the no-model scorer -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scorer(index: Index) -> NoModelSupportScorer:
    return NoModelSupportScorer(StorePages(index.store))


def test_no_model_scorer_separates_true_wrong_page_and_perturbed(scorer: NoModelSupportScorer, doc_id: str) -> None:
    claim = "Revenue of Zephyr Corp reached 4,250 million dollars in 2019."
    items = [
        JudgeItem(claim, doc_id, 2),  # the right page
        JudgeItem(claim, doc_id, 3),  # a wrong page
        JudgeItem(claim.replace("4,250", "8,500"), doc_id, 2),  # a perturbed number
        JudgeItem("Halvorsen was appointed chief executive of Zephyr Corp in 2020.", doc_id, 6),
        JudgeItem("Halvorsen was appointed chief executive of Zephyr Corp in 2020.", doc_id, 1),
        JudgeItem(claim, doc_id, 7),  # no text on the page: abstain
    ]
    out = scorer.judge(items)
    verdicts = [o.verdict for o in out]
    assert verdicts[:2] == ["supported", "unsupported"] and verdicts[3:] == ["supported", "unsupported", "unknown"]
    # A changed number lowers the score, but with the shipped (MMLongBench-Doc-calibrated) weights one
    # wrong number in an otherwise matching sentence is not always enough to fail it: see docs/VERIFY.md.
    assert out[0].score > out[2].score and out[0].score > out[1].score
    assert "no text" in out[5].error and out[5].score is None
    feats = scorer.features(items[:3])
    assert feats[0]["numbers_found"] == 1.0 and feats[2]["numbers_found"] == 0.5
    assert feats[0]["similarity"] > feats[1]["similarity"]


def test_calibration_fits_weights_and_threshold() -> None:
    import numpy as np

    from trident_local.verify.judge_text import FEATURES, ScorerParams, best_threshold, fit_params

    assert best_threshold(np.array([0.1, 0.4, 0.6, 0.9]), np.array([0, 0, 1, 1])) == (0.5, 1.0)
    feats = [{k: float(i % 2) for k in FEATURES} for i in range(20)]
    params = fit_params(feats, [bool(i % 2) for i in range(20)], info={"data": "toy"})
    assert params.calibration["calibration_accuracy"] == 1.0 and params.calibration["data"] == "toy"
    assert params.probability(feats[1]) > params.threshold > params.probability(feats[0])
    assert ScorerParams.from_dict(json.loads(json.dumps(params.to_dict()))) == params
    with pytest.raises(ValueError):
        fit_params(feats[:2], [True, True])


# -- the pipeline ----------------------------------------------------------------------------------------
class KeywordJudge:
    """A deterministic stand-in judge: supported iff every keyword of the claim (words in CAPS) is on the page."""

    name = "keyword"

    def __init__(self, pages: StorePages, channel: str = "text", fail_on: str | None = None):
        self.pages, self.channel, self.calls, self.fail_on, self.seen = pages, channel, 0, fail_on, []

    def judge(self, items):
        out = []
        for it in items:
            self.calls += 1
            self.seen.append(it.page)
            if self.fail_on and self.fail_on in it.claim:
                out.append(Judgement("unknown", "", self.channel, it.page, self.name, error="bad output"))
                continue
            keys = [w.strip(".,").lower() for w in it.claim.split() if w.isupper() and len(w) > 2]
            text = self.pages.text(it.doc_id, it.page).lower()
            ok = bool(keys) and all(k in text for k in keys)
            out.append(Judgement("supported" if ok else "unsupported", "", self.channel, it.page, self.name))
        return out


def test_pipeline_window_search_at_document_edges(index: Index, doc_id: str) -> None:
    pages = StorePages(index.store)
    judge = KeywordJudge(pages)
    v = Verifier(pages, judge, window=2, store=index.store)
    answer = (
        "AURORA started in 2011 [p. 1]. "  # right page: keep
        "AURORA had 14 engineers [p. 2]. "  # wrong page next to the first page: fix to 1
        "HALVORSEN became chief executive [p. 7]. "  # the last page: the window is 5, 6 -> fix to 6
        "FALCON has a 6.5 m mirror [p. 1]. "  # page 4 is 3 pages away: outside the window -> remove
        "ZEPHYR reported revenue [p. 42]. "  # no such page: removed, flagged out of range
        "An uncited sentence."
    )
    rep = v.verify(answer, "facts.pdf")
    got = [(r.claim.claim_id, r.cited_page, r.verdict, r.action, r.new_page) for r in rep.results]
    assert got == [
        ("c1", 1, "supported", "keep", None),
        ("c2", 2, "unsupported", "fix-page", 1),
        ("c3", 7, "unsupported", "fix-page", 6),
        ("c4", 1, "unsupported", "remove", None),
        ("c5", 42, "unsupported", "remove", None),
    ]
    assert rep.results[1].window == {1: "supported", 3: "supported", 4: "unsupported"} or \
        rep.results[1].window[1] == "supported"
    assert sorted(rep.results[2].window) == [5, 6]
    assert sorted(rep.results[3].window) == [2, 3]  # document start respected
    assert "page-out-of-range" in rep.results[4].flags and rep.results[4].judgements == []
    assert rep.corrected_answer == ("AURORA started in 2011 [p. 1]. AURORA had 14 engineers [p. 1]. "
                                    "HALVORSEN became chief executive [p. 6]. An uncited sentence.")
    assert rep.uncited == ["An uncited sentence."] and rep.doc_id == doc_id and rep.file_name == "facts.pdf"
    # the window pages proposed a page, they never gave the verdict: the cited page was judged first
    assert judge.seen[:5] == [1, 2, 7, 1]  or judge.seen[:4] == [1, 2, 7, 1]


def test_pipeline_two_channels_conflicts_and_failures(index: Index, doc_id: str) -> None:
    pages = StorePages(index.store)

    class Contrary(KeywordJudge):
        def judge(self, items):
            flip = {"supported": "unsupported", "unsupported": "supported"}
            return [Judgement(flip[j.verdict], "", "image", j.page, "contrary") for j in super().judge(items)]

    v = Verifier(pages, KeywordJudge(pages), Contrary(pages, "image"), window=1, store=index.store)
    rep = v.verify({"claims": [{"text": "AURORA started in 2011.", "pages": [1]}]}, doc_id)
    (r,) = rep.results
    assert (r.verdict, r.action, r.flags) == ("inconsistent", "flag", ["hard-conflict", "inconsistent"])
    assert [j.channel for j in r.judgements] == ["text", "image"]
    (kept,) = rep.corrected_answer["claims"]  # flagged, kept, and pointed at the line that states 2011
    assert kept["pages"] == [1] and "started in 2011" in kept["regions"][0]["text"]
    assert set(rep.judges) == {"text", "image"}

    failing = Verifier(pages, KeywordJudge(pages, fail_on="BROKEN"), window=2, store=index.store)
    rep = failing.verify("BROKEN AURORA claim [p. 3]. AURORA started [p. 1].", doc_id)
    assert [(r.verdict, r.action) for r in rep.results] == [("unknown", "flag"), ("supported", "keep")]
    assert rep.results[0].flags == ["text-judge-error", "unverified"]
    with pytest.raises(TridentError):
        Verifier(pages, None, None)


def test_pipeline_no_model_default_end_to_end(index: Index, doc_id: str) -> None:
    v = Verifier.from_index(index, text="none", image="same", window=2)
    assert v.judges == {"text": "no-model-support-scorer"} and v.image_judge is None
    rep = v.verify("Revenue of Zephyr Corp reached 4,250 million dollars in 2019 [p. 3].", "facts")
    (r,) = rep.results
    assert (r.verdict, r.action, r.new_page) == ("unsupported", "fix-page", 2)
    assert rep.corrected_answer == "Revenue of Zephyr Corp reached 4,250 million dollars in 2019 [p. 2]."
    assert rep.model_calls == 0
    empty = v.verify("No citations here.", doc_id)
    assert empty.results == [] and empty.warnings


def test_verify_cli(index: Index, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from trident_local.cli import app

    ans = tmp_path / "answer.txt"
    ans.write_text("Revenue of Zephyr Corp reached 4,250 million dollars in 2019 [p. 3].", encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["verify", "--index", str(index.store.root), "--doc", "facts.pdf", str(ans),
                              "--text-judge", "none", "--json", "-"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["results"][0]["action"] == "fix-page" and data["results"][0]["new_page"] == 2
    assert data["corrected_answer"].endswith("[p. 2].")
    js = tmp_path / "answer.json"
    js.write_text(json.dumps({"answer": "a", "claims": [{"text": "Ingrid Halvorsen was appointed chief "
                                                                 "executive of Zephyr Corp in March 2020.",
                                                         "pages": [6]}]}), encoding="utf-8")
    res = runner.invoke(app, ["verify", "-i", str(index.store.root), "-d", "facts", str(js), "--text-judge", "none",
                              "--window", "1", "--json", str(tmp_path / "rep.json")])
    assert res.exit_code == 0, res.output
    assert "keep" in res.stdout and "corrected answer" in res.stdout
    assert json.loads((tmp_path / "rep.json").read_text())["window"] == 1
    res = runner.invoke(app, ["verify", "-i", str(index.store.root), "-d", "nope.pdf", "x [p. 1]",
                              "--text-judge", "none"])
    assert res.exit_code == 2 and "no document" in res.output
    res = runner.invoke(app, ["verify", "-i", str(index.store.root), "-d", "facts", str(tmp_path / "missing.txt"),
                              "--text-judge", "none"])
    assert res.exit_code == 2 and "no such file" in res.output


def test_the_scorer_reuses_dense_vectors_only_of_the_windows_it_was_fitted_on(index: Index) -> None:
    """Its weights were fitted on word windows: an index with token windows gets the scorer's own."""
    from trident_local.windows import WindowSpec

    cfg = index.store.config
    saved = cfg.chunk_tokens, cfg.chunk_drop_stop_words
    try:
        for tokens, drop, reuse in ((0, False, True), (128, False, False), (0, True, False), (128, True, False)):
            cfg.chunk_tokens, cfg.chunk_drop_stop_words = tokens, drop
            judge = Verifier.from_index(index, text="none", image="none").text_judge
            assert judge.reuse_index_vectors is reuse
            assert judge.windows == WindowSpec(cfg.chunk_words, cfg.chunk_stride, 0)
    finally:
        cfg.chunk_tokens, cfg.chunk_drop_stop_words = saved
