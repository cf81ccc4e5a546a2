"""benchmarks/page_embedding.py on the toy ColQwen2.5: it renders, embeds and reports (CPU smoke run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmark_module import load

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]


def test_toy_run_writes_one_row_per_batch_size(tmp_path: Path) -> None:
    bench = load("page_embedding")
    out = tmp_path / "pe.json"
    pdf = str(REPO / "samples" / "sparse_page_retrieval.pdf")
    argv = ["--tiny", "--pdfs", pdf, "--pages", "3", "--batch-sizes", "1", "2", "--repeats", "1", "--out", str(out)]
    assert bench.main(argv) == 0
    report = json.loads(out.read_text())
    assert [r["batch"] for r in report["rows"]] == [1, 2]
    for row in report["rows"]:
        assert row["pages"] == 3 and row["pages_per_s"] > 0 and row["sequential_pages_per_s"] > 0
        assert row["tokens_per_page"] > 0 and row["peak_gib"] is None  # no CUDA here
    assert report["render_cpu_ms_per_page"] > 0 and report["attn"] == "eager"
