"""Trace answers (extractive and with a stub chat model), the ladder runner, and the `trident trace` /
`trident eval trace` commands on a small generated paper collection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_trace_locators import paper_pdf
from typer.testing import CliRunner

from trident_local.cli import app
from trident_local.config import Config
from trident_local.errors import ModelOutputError, TridentError
from trident_local.evaluate.trace_run import run_ladder
from trident_local.index import Index
from trident_local.models.protocols import ChatResult
from trident_local.trace import Tracer
from trident_local.trace.answer import parse_model_answer
from trident_local.trace.tables import split_merged

pytestmark = pytest.mark.integration

A, B = "2401.01234v2", "10.5555/tests.2021.042"

DATASET = [
    {"id": "t1", "question": "What accuracy does ZEBRA reach in Table 1?", "answer_format": "free_form",
     "answer": "91.5", "gold_papers": [A],
     "gold_evidence": [{"paper": A, "page": 2, "type": "table", "object": "Table 1", "quote": "ZEBRA 91.5 120"}],
     "multi_paper": False},
    {"id": "t2", "question": "Which prior work does the SEGNEXT tokenizer follow?", "answer_format": "multiple_choice",
     "choices": ["byte pair encoding of earlier work [3]", "a character-level model", "no tokenizer at all"],
     "answer": "A", "gold_papers": [B],
     "gold_evidence": [{"paper": B, "page": 2, "type": "citation_context", "object": None,
                        "quote": "Our tokenizer follows the byte pair encoding of earlier work [3]."}],
     "multi_paper": False},
    {"id": "t3", "question": "Give the accuracy of ZEBRA and of SEGNEXT from their results tables.",
     "answer_format": "table", "answer": [["Model", "Accuracy"], ["ZEBRA", "91.5"], ["SEGNEXT", "91.5"]],
     "gold_papers": [A, B],
     "gold_evidence": [{"paper": A, "page": 2, "type": "table", "object": "Table 1", "quote": "ZEBRA 91.5"},
                       {"paper": B, "page": 2, "type": "table", "object": "Table 1", "quote": "SEGNEXT 91.5"}],
     "multi_paper": True},
]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Index:
    d = tmp_path_factory.mktemp("tracecli")
    paper_pdf(d / "a.pdf", title="ZEBRA: Fast Parsing of Long Sentences", system="ZEBRA",
              stamp="arXiv:2401.01234v2  [cs.CL]  5 Jan 2024", topic="parsing")
    paper_pdf(d / "b.pdf", title="Gradient Tricks for Image Segmentation", system="SEGNEXT",
              doi="10.5555/tests.2021.042", topic="segmentation")
    idx = Index.create(d / "idx", Config(embedder="none", pools=["bm25"], ocr="none"))
    assert not idx.add([d / "a.pdf", d / "b.pdf"], workers=1).failed
    return idx


class StubChat:
    """A ChatModel that replays canned replies and records the requests."""

    name = "stub"
    supports_images = False
    supports_json_schema = True

    def __init__(self, *replies: str):
        self.replies = list(replies)
        self.requests = []

    def chat(self, requests):
        self.requests += list(requests)
        return [ChatResult(text=self.replies.pop(0)) for _ in requests]


# -- answers ---------------------------------------------------------------------------------------------------
def test_extractive_trace(index: Index) -> None:
    res = Tracer(index).trace("What accuracy does ZEBRA reach in the results table?")
    assert res.papers == [A] and res.mode == "extractive" and res.model == "none"
    assert res.answer == "91.5"
    assert res.evidence[0] == {"paper": A, "page": 2, "type": "table", "object": "Table 1", "object_id": "p2:table:1"}
    d = res.to_dict()
    assert {"papers", "evidence", "answer"} <= set(d)


def test_extractive_multiple_choice_and_table(index: Index) -> None:
    tr = Tracer(index)
    mc = tr.trace(DATASET[1]["question"], "multiple_choice", DATASET[1]["choices"])
    assert mc.answer == "A" and mc.papers == [B]
    tab = tr.trace("List the accuracy of each model in the ZEBRA results table.", "table")
    assert tab.answer[0][:2] == ["Model", "Accuracy"] and tab.answer[1][:2] == ["ZEBRA", "91.5"]


def test_chat_answer_is_parsed_and_repaired(index: Index) -> None:
    chat = StubChat('```json\n{"answer": "(b) a character-level model"}\n```')
    res = Tracer(index, chat).trace(DATASET[1]["question"], "multiple_choice", DATASET[1]["choices"])
    assert (res.mode, res.model, res.answer) == ("generated", "stub", "B")
    assert any("read as B" in n for n in res.notes)
    req = chat.requests[0]
    assert req.json_schema["properties"]["answer"]["enum"] == ["A", "B", "C"]
    assert "[1] paper 10.5555/tests.2021.042, page 2" in req.messages[-1].text()


def test_unusable_chat_answer_falls_back_to_extractive(index: Index) -> None:
    res = Tracer(index, StubChat('{"answer": "none of them"}')).trace(
        DATASET[1]["question"], "multiple_choice", DATASET[1]["choices"])
    assert res.mode == "extractive" and res.answer == "A"
    assert "unusable" in res.notes[0]


def test_parse_model_answer() -> None:
    assert parse_model_answer('{"answer": "91.5"}', "free_form", []) == ("91.5", [])
    assert parse_model_answer("91.5 percent", "free_form", [])[0] == "91.5 percent"  # not JSON: taken as text
    rows, _ = parse_model_answer('{"answer": [["Model", "Acc"], ["Z", "91.5"]]}', "table", [])
    assert rows == [["Model", "Acc"], ["Z", "91.5"]]
    value, repairs = parse_model_answer('"C"', "multiple_choice", ["x", "y", "z"])
    assert value == "C" and repairs  # a bare value, not an object
    assert parse_model_answer("The answer is B.", "multiple_choice", ["x", "y"])[0] == "B"
    with pytest.raises(ModelOutputError):
        parse_model_answer('{"answer": [["only header"]]}', "table", [])
    with pytest.raises(ModelOutputError):
        parse_model_answer('{"reply": "x"}', "free_form", [])


def test_split_merged_cells() -> None:
    rows = [["Model", "Acc."], ["BM25 DPR RAPTOR", "57.3 60.4 62.4"]]  # rows merged by the detector
    assert split_merged(rows) == [["Model", "Acc."], ["BM25", "57.3"], ["DPR", "60.4"], ["RAPTOR", "62.4"]]
    rows = [["Data", "GPT-4"], ["", "CoT Ours"], ["X", "1.0 2.0"]]  # sub-columns merged under a spanning header
    assert split_merged(rows) == [["Data", "GPT-4 CoT", "GPT-4 Ours"], ["X", "1.0", "2.0"]]


def test_bad_requests(index: Index) -> None:
    with pytest.raises(TridentError, match="format"):
        Tracer(index).trace("q", "essay")
    with pytest.raises(TridentError, match="choices"):
        Tracer(index).trace("q", "multiple_choice", ["only one"])
    with pytest.raises(TridentError, match="no paper"):
        Tracer(index).trace("q", papers=["9999.99999"])


# -- ladder --------------------------------------------------------------------------------------------------
def test_ladder(index: Index) -> None:
    out = run_ladder(index, DATASET)
    assert list(out["ladder"]) == ["end_to_end", "oracle_papers", "oracle_evidence"]
    for key in ("paper_f1", "evidence_f1", "answer_accuracy", "joint_success"):
        assert 0.0 <= out[key] <= 1.0
    assert out["ladder"]["oracle_papers"]["paper_f1"] == 1.0
    ev = out["ladder"]["oracle_evidence"]
    assert ev["paper_f1"] == 1.0 and ev["evidence_f1"] == 1.0
    assert out["predictions"]["oracle_evidence"][0]["answer"] == "91.5"
    with pytest.raises(TridentError, match="not in the index"):
        run_ladder(index, [{**DATASET[0], "gold_papers": ["1234.56789"]}])


# -- commands ------------------------------------------------------------------------------------------------
def test_trace_command(index: Index) -> None:
    res = CliRunner().invoke(app, ["trace", "--index", str(index.store.root), "--json", "-",
                                   "Which prior work does the SEGNEXT tokenizer follow?",
                                   "--format", "multiple_choice", "--choices", "byte pair encoding [3]|characters"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["papers"] == [B] and d["answer"] in ("A", "B") and d["mode"] == "extractive"
    res = CliRunner().invoke(app, ["trace", "--index", str(index.store.root), "What accuracy does ZEBRA reach in the results table?"])
    assert res.exit_code == 0 and "extractive" in res.stdout and "Table 1" in res.stdout


def test_eval_trace_ladder_and_score_commands(index: Index, tmp_path: Path) -> None:
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps(DATASET))
    out, preds = tmp_path / "out.json", tmp_path / "preds"
    runner = CliRunner()
    res = runner.invoke(app, ["eval", "trace", "--index", str(index.store.root), "--dataset", str(ds), "--ladder",
                              "--json", str(out), "--save-preds", str(preds)])
    assert res.exit_code == 0, res.output
    s = json.loads(out.read_text())
    assert {"paper_f1", "evidence_f1", "answer_accuracy", "joint_success", "ladder"} <= set(s)
    assert set(s["ladder"]) == {"end_to_end", "oracle_papers", "oracle_evidence"}
    assert "oracle_evidence" in res.stdout
    # scoring the saved predictions reproduces the run's numbers
    scored = tmp_path / "scored.json"
    res = runner.invoke(app, ["eval", "trace", "score", "--gold", str(ds), "--pred", str(preds / "end_to_end.jsonl"),
                              "--json", str(scored)])
    assert res.exit_code == 0, res.output
    s2 = json.loads(scored.read_text())
    for key in ("paper_f1", "evidence_f1", "answer_accuracy", "joint_success"):
        assert s2[key] == pytest.approx(s[key])


def test_eval_trace_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["eval", "trace"])
    assert res.exit_code == 2 and "--index" in res.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "x", "question": "q", "answer_format": "multiple_choice", "answer": "Z",
                                "choices": ["a", "b"], "gold_papers": ["p"], "gold_evidence": []}]))
    pred = tmp_path / "p.jsonl"
    pred.write_text("")
    res = runner.invoke(app, ["eval", "trace", "score", "--gold", str(bad), "--pred", str(pred)])
    assert res.exit_code == 2 and "invalid dataset" in " ".join(res.output.split())


def test_a_trace_embeds_its_question_once(index: Index) -> None:
    """Papers, objects and the extractive answer share one Query: one query embedding per trace."""
    import numpy as np

    class Counting:
        name, dim = "counting-test-embedder", 8

        def __init__(self):
            self.queries: list[str] = []

        def encode(self, texts, kind="passage"):
            if kind == "query":
                self.queries += list(texts)
            return np.stack([np.resize(np.frombuffer(t.encode()[:8].ljust(8), np.uint8), 8).astype(np.float32)
                             for t in texts]) if texts else np.zeros((0, 8), np.float32)

    emb = Counting()
    question = "What accuracy does ZEBRA reach in the results table?"
    res = Tracer(index, embedder=emb).trace(question)
    assert res.papers == [A] and emb.queries == [question]
