"""The no-model answer's confidence: features, the non-negative logistic fit, refitting a run, as-is scoring."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trident_local.evaluate.abstention import Candidate, calibrate, refit, rescore, scored_at, thresholds
from trident_local.evaluate.qa_extract import NOT_ANSWERABLE, as_is, extract
from trident_local.generate.answer_confidence import FEATURES, AnswerConfidence, fit
from trident_local.generate.evidence_answer import CONFIDENCE
from trident_local.generate.spans import count_of, counted_noun
from trident_local.text import clean_question

ROOT = Path(__file__).resolve().parents[1]


def _rows(n_right: int = 6, n_wrong: int = 30) -> tuple[list[dict[str, float]], list[bool]]:
    """Right answers have the question's words beside a typed value; wrong ones mostly do not. The cosine
    is made higher on wrong ones, so an unconstrained fit would give it a negative weight."""
    feats, ok = [], []
    for i in range(n_right):
        feats.append({"lex": 0.8 + 0.02 * i, "cos": 0.3, "coverage": 1.0, "typed": 1.0, "table": 0.0, "adjacent": 1.0})
        ok.append(True)
    for i in range(n_wrong):
        feats.append({"lex": 0.1 + 0.02 * (i % 10), "cos": 0.8, "coverage": 0.5, "typed": float(i % 2),
                      "table": 0.0, "adjacent": 0.0})
        ok.append(False)
    return feats, ok


def test_fit_keeps_every_weight_non_negative_and_ranks_right_answers_first() -> None:
    feats, ok = _rows()
    model = fit(feats, ok)
    assert set(model.weights) == set(FEATURES) and all(w >= 0 for w in model.weights.values())
    assert model.weights["cos"] == 0.0 and model.weights["lex"] > 0
    p = [model.probability(f) for f in feats]
    assert min(p[:6]) > max(p[6:])
    more = dict(feats[6], lex=feats[6]["lex"] + 0.3)
    assert model.probability(more) >= model.probability(feats[6])  # more evidence never lowers it


def test_fit_refuses_what_cannot_be_fitted() -> None:
    feats, ok = _rows()
    with pytest.raises(ValueError, match="both"):
        fit(feats[6:], ok[6:])
    with pytest.raises(ValueError, match="one outcome"):
        fit(feats, ok[:-1])


def test_params_round_trip_and_reject_unknown_features() -> None:
    again = AnswerConfidence.from_dict(json.loads(json.dumps(CONFIDENCE.to_dict())))
    assert again == CONFIDENCE
    with pytest.raises(ValueError, match="unknown confidence features"):
        AnswerConfidence.from_dict({"weights": {"vibes": 1.0}, "bias": 0, "threshold": 0.5})
    assert 0 < CONFIDENCE.threshold < 1 and all(w >= 0 for w in CONFIDENCE.weights.values())


def test_refit_a_run_then_score_another_with_its_model_and_threshold() -> None:
    feats, ok = _rows()
    cands = [Candidate("12" if right else "Not answerable", "Int" if right else "None",
                       "12" if right else "7", 0.5, f) for f, right in zip(feats, ok, strict=True)]
    model, rescored = refit(cands)
    cal = calibrate(rescored, thresholds(rescored))
    assert cal["threshold"] == model.threshold and cal["best"]["accuracy"] == 1.0
    assert [c.confidence for c in rescore(cands, model)] == [c.confidence for c in rescored]
    with pytest.raises(ValueError, match="no features"):
        refit([Candidate("1", "Int", "1", 0.5)])


def test_as_is_scoring_drops_thousands_separators_of_a_lone_number_only() -> None:
    assert as_is("1,358,000") == "1358000" and as_is("$3,500.25") == "$3500.25" and as_is("12%") == "12%"
    assert as_is("Paris, France") == "Paris, France" and as_is("1,2 and 3") == "1,2 and 3"
    assert as_is("Not answerable from the retrieved pages") == NOT_ANSWERABLE
    assert extract(None, "How many shares?", "1,358,000").answer == "1358000"
    s = scored_at([Candidate("1358000", "Float", "1,358,000", 0.9)], 0.5)[0]
    assert s.score == 1.0


def test_counted_noun_and_the_number_it_follows() -> None:
    assert counted_noun("How many membership warehouses did COSTCO operate at 2021?") == "membership"
    assert counted_noun("How many square miles did Hamilton county cover?") == "squar"
    assert counted_noun("For all the examples, how many of them are correct?") == ""
    text = "In 2021 Costco operated 815 membership warehouses, up from 795 in 2020."
    span = count_of(text, "membership")
    assert span is not None and span.text == "815"
    assert count_of(text, "membership", exclude=["815"]) is None
    assert count_of("It covered 2021 square miles.", "squar") is None  # a year is not a count


def test_answer_form_instructions_are_cut_before_matching() -> None:
    q = "How many items in total of Amazon related datasets in the paper? Please write the answer in int format."
    assert clean_question(q) == "How many items in total of Amazon related datasets in the paper?"


def test_calibration_script_fits_on_calib_and_scores_test(tmp_path: Path) -> None:
    feats, ok = _rows()
    rows = [{"qid": i, "gold": "12" if right else "Not answerable", "answer_format": "Int" if right else "None",
             "pred": "12", "candidate": "12" if right else "7", "confidence": 0.5, "features": f}
            for i, (f, right) in enumerate(zip(feats, ok, strict=True))]
    run = tmp_path / "calib.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out, params = tmp_path / "out.json", tmp_path / "params.json"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "calibrate_abstention.py"), str(run), "--fit",
                          "--test", str(run), "--save-params", str(params), "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    result = json.loads(out.read_text())
    assert result["test"]["accuracy"] == 1.0 and result["test_all_not_answerable"]["accuracy"] < 1.0
    assert AnswerConfidence.from_dict(json.loads(params.read_text())).threshold == result["threshold"]
