"""The retrieval regression gate (benchmarks/retrieval_gate.py): the default pool's Recall@5 and MRR on a
fixed slice of both development sets may not fall more than the tolerance below the committed baseline."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmark_module import load

REPO = Path(__file__).resolve().parents[1]


def _gate():
    return load("retrieval_gate")


def test_regressions_name_each_drop_past_the_tolerance() -> None:
    gate = _gate()
    spec = {"tolerance": 0.02, "gated_pool": "fused",
            "baseline": {"a": {"recall@5": 0.70, "mrr": 0.60}, "b": {"recall@5": 0.50, "mrr": 0.40}}}
    figures = {"sets": {"a": {"pools": {"fused": {"recall@5": 0.685, "mrr": 0.55}}},
                        "b": {"pools": {"fused": {"recall@5": 0.60, "mrr": 0.40}}}}}
    bad = gate.regressions(spec, figures)
    assert len(bad) == 1 and bad[0].startswith("a: fused mrr 0.550")


def test_the_slice_file_names_a_baseline_for_every_set() -> None:
    spec = _gate().load_slice()
    assert set(spec["baseline"]) == set(spec["sets"])
    assert spec["gated_pool"] in spec["pools"]


@pytest.mark.integration
def test_default_retrieval_holds_its_baseline_on_both_sets(tmp_path: Path) -> None:
    gate = _gate()
    spec = gate.load_slice()
    missing = gate.missing_data(spec)
    if missing:
        pytest.skip(f"the development data is not beside the repository: {missing[0]}")
    figures = gate.score_slice(spec, tmp_path)
    gate.print_table(spec, figures)
    for name, s in figures["sets"].items():
        assert s["questions"] == spec["expected_questions"][name], "the slice's questions changed"
    assert gate.regressions(spec, figures) == []
