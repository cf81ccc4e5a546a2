"""`trident annotate`, `trident ask`, `trident eval qa` and `eval retrieval --rerank annotated` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trident_local.cli import app
from trident_local.index import Index

pytestmark = pytest.mark.integration

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
runner = CliRunner()


def flat(res) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(res.output.split())


DATASET = [
    {
        "doc_id": "helios_annual_report_2023.pdf",
        "question": "What was the revenue of the Coastal region in 2023?",
        "answer": "95.2",
        "evidence_pages": "[2]",
        "evidence_sources": "['Table']",
        "answer_format": "Float",
    },
    {
        "doc_id": "helios_annual_report_2023.pdf",
        "question": "How many megawatts of new solar capacity were connected in 2023?",
        "answer": "412",
        "evidence_pages": "[1]",
        "evidence_sources": "['Pure-text']",
        "answer_format": "Int",
    },
    {
        "doc_id": "sparse_page_retrieval.pdf",
        "question": "Who painted the Mona Lisa?",
        "answer": "Not answerable",
        "evidence_pages": "[]",
        "evidence_sources": "[]",
        "answer_format": "None",
    },
    {
        "doc_id": "sparse_page_retrieval.pdf",
        "question": "What is the MRR of RRF fusion?",
        "answer": "0.56",
        "evidence_pages": "[9]",
        "evidence_sources": "['Table']",
        "answer_format": "Float",
    },  # page 9: a defect
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli") / "ix"
    Index.create(d).add([SAMPLES], workers=1)  # not annotated yet: `trident annotate` does it below
    return d


@pytest.fixture(scope="module")
def annotated(index_dir: Path) -> Path:
    res = runner.invoke(app, ["annotate", "--index", str(index_dir)])
    assert res.exit_code == 0, res.output
    assert "annotated 2 document(s), 6 pages" in flat(res)
    return index_dir


def test_ask_before_annotation_keeps_the_pool_order_and_says_what_to_run(index_dir: Path) -> None:
    res = runner.invoke(app, ["ask", "revenue?", "--index", str(index_dir)])  # the default rerank: auto
    assert res.exit_code == 0 and "rerank none" in flat(res) and "trident annotate" in flat(res)
    res = runner.invoke(app, ["ask", "revenue?", "--index", str(index_dir), "--rerank", "annotated"])
    assert res.exit_code == 2 and "trident annotate" in flat(res)
    res = runner.invoke(
        app, ["ask", "revenue?", "--index", str(index_dir), "--rerank", "none", "--pool", "bm25"]
    )
    assert res.exit_code == 0 and "evidence-first (no model)" in flat(res)


def test_annotate_is_resumable(annotated: Path) -> None:
    res = runner.invoke(app, ["annotate", "--index", str(annotated), "--json", "-"])
    assert res.exit_code == 0 and '"skipped"' in res.output and "2 already annotated" in flat(res)


def test_ask_prints_answer_pages_and_timings(annotated: Path) -> None:
    res = runner.invoke(
        app,
        [
            "ask",
            "What was the revenue of the Coastal region in 2023?",
            "--index",
            str(annotated),
            "--doc",
            "helios_annual_report_2023",
        ],
    )
    assert res.exit_code == 0, res.output
    out = flat(res)
    assert "Answer (evidence-first (no model)): 95.2" in out
    assert "helios_annual_report_2023.pdf, page 2" in out and "Table 1" in out
    assert "timings:" in out and "rerank" in out


@pytest.mark.parametrize("pool", ["bm25", "dense", "rrf", "fused", "xkg"])
def test_ask_json_every_pool(annotated: Path, pool: str) -> None:
    res = runner.invoke(
        app,
        [
            "ask",
            "How many megawatts of new solar capacity were connected in 2023?",
            "--index",
            str(annotated),
            "--pool",
            pool,
            "--rerank",
            "annotated",
            "--json",
            "-",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["pool"] == pool and data["rerank"]["mode"] == "no-model:fused-match"
    assert 1 <= len(data["answer"]["citations"]) <= 5 and set(data["timings"]) == {
        "retrieve",
        "rerank",
        "answer",
        "regions",
        "verify",
        "total",
    }
    assert all(isinstance(c["regions"], list) for c in data["answer"]["citations"])
    assert data["answer"]["verification"]["judges"] == {"text": "no-model-support-scorer"}
    assert (data["route"] is not None) == (pool == "xkg")


def test_ask_rejects_bad_options(annotated: Path) -> None:
    for extra in (["--rerank", "llm"], ["--answer", "poem"], ["--fields", "all"], ["--pool", "nope"]):
        res = runner.invoke(app, ["ask", "q?", "--index", str(annotated), *extra])
        assert res.exit_code == 2, extra


def test_eval_qa(annotated: Path, tmp_path: Path) -> None:
    ds = tmp_path / "samples.json"
    ds.write_text(json.dumps(DATASET))
    out, run = tmp_path / "qa.json", tmp_path / "qa.jsonl"
    res = runner.invoke(
        app,
        [
            "eval",
            "qa",
            "--index",
            str(annotated),
            "--dataset",
            str(ds),
            "--json",
            str(out),
            "--run",
            str(run),
        ],
    )
    assert res.exit_code == 0, res.output
    s = json.loads(out.read_text())
    assert s["n"] == 3 and s["skipped_bad_pages"] == 1 and s["answer"] == "evidence-first"
    assert {"accuracy", "f1", "per_format", "per_source", "mean_k", "protocol"} <= set(s)
    rows = [json.loads(x) for x in run.read_text().splitlines()]
    assert [r["pred"] for r in rows] == ["95.2", "412", "Not answerable"]
    assert all(r["confidence"] is not None and r["candidate"] for r in rows)
    assert s["unanswerable"] == {"precision": 1.0, "recall": 1.0, "predicted": 1, "gold": 1}
    assert s["accuracy"] == 1.0 and s["f1"] == 1.0
    assert s["per_format"]["Int"] == {"n": 1, "accuracy": 1.0} and s["per_source"]["Table"]["n"] == 1


def test_eval_retrieval_with_annotated_rerank(annotated: Path, tmp_path: Path) -> None:
    ds = tmp_path / "samples.json"
    ds.write_text(json.dumps(DATASET[:2]))
    out = tmp_path / "r.json"
    res = runner.invoke(
        app,
        [
            "eval",
            "retrieval",
            "--index",
            str(annotated),
            "--dataset",
            str(ds),
            "--pool",
            "bm25",
            "--rerank",
            "annotated",
            "--fields",
            "caption-only",
            "--json",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    s = json.loads(out.read_text())
    assert s["rerank"] == "annotated" and s["fields"] == "caption-only" and s["rerank_fallbacks"] == 0
    assert 1 <= s["mean_k"] <= 5 and {
        "n",
        "recall@5",
        "precision@5",
        "f1@5",
        "mrr",
        "ndcg@5",
        "recall@20",
    } <= set(s)


def test_ask_with_a_tiny_model_profile(
    annotated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model path end to end; a random model's output is unusable, so every stage must fall back."""
    from tiny_models import tiny_chat_profile

    from trident_local.generate import model_answer
    from trident_local.models.profiles import load_profile
    from trident_local.rerank import model_rerank

    monkeypatch.setattr(model_answer, "MAX_TOKENS", 8)
    monkeypatch.setattr(model_rerank, "max_tokens", lambda schema: 8)
    profile = tiny_chat_profile(tmp_path, "llama")
    res = runner.invoke(
        app,
        [
            "ask",
            "How many megawatts?",
            "--index",
            str(annotated),
            "--doc",
            "helios_annual_report_2023",
            "--profile",
            profile,
            "--pool",
            "bm25",
            "--fields",
            "caption-only",
            "--k-max",
            "1",
            "--json",
            "-",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    name = load_profile(profile).name  # modes name the chat model, not the path it was given by
    assert data["rerank"]["mode"] == f"model:{name}" and data["rerank"]["fallback"] is True
    assert data["answer"]["mode"] == f"plain:{name}" and len(data["answer"]["citations"]) == 1


def test_eval_qa_with_a_tiny_model_profile(
    annotated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rerank, answer and answer extraction through a chat model: garbage in, counted fallbacks out."""
    from tiny_models import tiny_chat_profile

    from trident_local.evaluate import qa_extract
    from trident_local.generate import model_answer
    from trident_local.rerank import model_rerank

    monkeypatch.setattr(model_answer, "MAX_TOKENS", 8)
    monkeypatch.setattr(model_rerank, "max_tokens", lambda schema: 8)
    real = qa_extract.extraction_request

    def short(question: str, reply: str):
        req = real(question, reply)
        req.params.max_tokens = 8
        return req

    monkeypatch.setattr(qa_extract, "extraction_request", short)
    ds = tmp_path / "samples.json"
    ds.write_text(json.dumps(DATASET[:1]))
    out = tmp_path / "qa.json"
    res = runner.invoke(
        app,
        [
            "eval",
            "qa",
            "--index",
            str(annotated),
            "--dataset",
            str(ds),
            "--pool",
            "bm25",
            "--fields",
            "caption-only",
            "--profile",
            tiny_chat_profile(tmp_path, "llama"),
            "--json",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    s = json.loads(out.read_text())
    assert s["n"] == 1 and s["rerank_fallbacks"] == 1 and s["answer"] == "auto"
    assert "local chat model" in s["protocol"] and 0.0 <= s["accuracy"] <= 1.0
