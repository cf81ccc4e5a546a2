"""`trident eval citations build` and `run` end to end on generated PDFs (the no-model default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trident_local.cli import app
from trident_local.config import Config
from trident_local.index import Index

pytestmark = pytest.mark.integration

FACTS = {
    "north.pdf": [
        ("How many wind turbines does the Northwind farm operate?", "48", "Int",
         "The Northwind farm operates 48 wind turbines along the coast of Jutland."),
        ("Who designed the Northwind substation?", "Helga Brandt", "Str",
         "The Northwind substation was designed by the engineer Helga Brandt in 2015."),
    ],
    "south.pdf": [
        ("What share of Southport's cargo is containers?", "62.5%", "Float",
         "Containers account for 62.5% of all cargo handled at Southport harbour."),
        ("Which city hosts the Southport archive?", "Valletta", "Str",
         "The Southport archive is hosted in the city of Valletta, next to the old library."),
    ],
    "east.pdf": [
        ("How many employees did Eastline hire in 2021?", "1,250", "Int",
         "In 2021 Eastline hired 1,250 employees for its new rail workshops."),
        ("Which colours appear in the Eastline logo?", "['green', 'orange']", "List",
         "The Eastline logo uses green and orange stripes on a white field."),
    ],
}
FILLER = ["Background notes on regional weather and rainfall statistics.",
          "A glossary of technical terms used throughout this document.",
          "Contact details of the press office and opening hours."]


def make_docs(folder: Path) -> tuple[list[Path], list[dict]]:
    import pymupdf

    paths, records = [], []
    for name, facts in FACTS.items():
        doc = pymupdf.open()
        texts = [FILLER[0], facts[0][3], FILLER[1], FILLER[2], facts[1][3], FILLER[0], FILLER[1]]
        for t in texts:
            doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 520, 300), t, fontsize=11)
        doc.save(folder / name)
        paths.append(folder / name)
        for (q, a, fmt, _), page in zip(facts, (2, 5), strict=True):
            records.append({"doc_id": name, "question": q, "answer": a, "evidence_pages": f"[{page}]",
                            "answer_format": fmt, "evidence_sources": "['Pure-text (Plain-text)']"})
    records.append({"doc_id": "north.pdf", "question": "Unanswerable?", "answer": "Not answerable",
                    "evidence_pages": "[]", "answer_format": "None", "evidence_sources": "[]"})
    records.append({"doc_id": "north.pdf", "question": "Printed page?", "answer": "3",
                    "evidence_pages": "[212]", "answer_format": "Int", "evidence_sources": "[]"})
    records.append({"doc_id": "west.pdf", "question": "Which flags?", "answer": "['red', 'blue']",  # a donor
                    "evidence_pages": "[1]", "answer_format": "List", "evidence_sources": "[]"})
    return paths, records


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("cite_cli")
    paths, records = make_docs(tmp)
    idx = Index.create(tmp / "idx", Config(pools=["bm25"], ocr="none"))
    assert not idx.add(paths, workers=1).failed
    (tmp / "data.json").write_text(json.dumps(records), encoding="utf-8")
    return tmp


def test_build_then_run(setup: Path) -> None:
    runner = CliRunner()
    out = setup / "inst.jsonl"
    res = runner.invoke(app, ["eval", "citations", "build", "--dataset", str(setup / "data.json"), "--index",
                              str(setup / "idx"), "--out", str(out), "--seed", "0", "--calib-fraction", "0.34"])
    assert res.exit_code == 0, res.output
    assert "18 instances from 6 of 9 records" in res.output.replace("\n", " ")
    assert "record 7" in res.output  # the page-212 defect is reported
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["by_label"] == {"supported": 6, "wrong_location": 6, "unsupported": 6}
    assert meta["by_split"] == {"calib": 6, "test": 12}
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 18 and {x["split"] for x in lines} == {"calib", "test"}

    js, params = setup / "run.json", setup / "params.json"
    res = runner.invoke(app, ["eval", "citations", "run", "--index", str(setup / "idx"), "--instances", str(out),
                              "--json", str(js), "--bootstrap", "50", "--save-params", str(params),
                              "--outcomes", str(setup / "outcomes.jsonl")])
    assert res.exit_code == 0, res.output
    data = json.loads(js.read_text())
    for key in ("binary_accuracy", "supported_recall", "wrong_location_recall", "precision_before",
                "precision_after", "retention", "coverage", "fix_reach"):
        assert key in data and key in data["ci95"]
    assert data["counts"]["instances"] == 12 and data["precision_before"] == pytest.approx(1 / 3)
    cal = data["config"]["no_model_scorer"]["calibration"]
    assert cal["instances"] == 6 and "calib split" in cal["data"]
    assert json.loads(params.read_text())["threshold"] == data["config"]["no_model_scorer"]["threshold"]
    assert len((setup / "outcomes.jsonl").read_text().splitlines()) == 12
    # fixed parameters, the whole set, stdout JSON
    res = runner.invoke(app, ["eval", "citations", "run", "--index", str(setup / "idx"), "--instances", str(out),
                              "--params", str(params), "--split", "all", "--bootstrap", "20", "--json", "-"])
    assert res.exit_code == 0, res.output
    whole = json.loads(res.stdout)
    assert whole["counts"]["instances"] == 18 and whole["config"]["no_model_scorer"] == json.loads(params.read_text())


def test_run_errors_are_one_line(setup: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n", encoding="utf-8")
    res = runner.invoke(app, ["eval", "citations", "run", "--index", str(setup / "idx"), "--instances", str(bad)])
    assert res.exit_code == 2 and "not an instance" in res.output
    res = runner.invoke(app, ["eval", "citations", "run", "--index", str(setup / "idx"), "--instances", str(bad),
                              "--split", "dev"])
    assert res.exit_code == 2 and "--split" in res.output
    res = runner.invoke(app, ["eval", "citations", "build", "--dataset", str(tmp_path / "none.json"), "--index",
                              str(setup / "idx"), "--out", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 2 and "cannot read the dataset" in res.output
