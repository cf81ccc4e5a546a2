"""The MMLongBench-Doc adapter: literal-string fields, doc resolution, defect reporting."""

from __future__ import annotations

import json

import pytest

from trident_local.errors import TridentError
from trident_local.evaluate.mmlongbench import load_samples, resolve_records


class _Entry:
    def __init__(self, doc_id: str, file_name: str, n_pages: int):
        self.doc_id, self.file_name, self.n_pages = doc_id, file_name, n_pages


class _Store:
    def entries(self, stages=None):
        return [_Entry("abc123", "a.pdf", 10)]


def test_load_and_resolve(tmp_path) -> None:
    data = [
        {"doc_id": "a.pdf", "doc_type": "Report", "question": "q1", "answer": "12", "evidence_pages": "[2, 5]",
         "evidence_sources": "['Table']", "answer_format": "Int"},
        {"doc_id": "a.pdf", "question": "q2", "answer": "Not answerable", "evidence_pages": "[]",
         "evidence_sources": "[]", "answer_format": "None"},
        {"doc_id": "a.pdf", "question": "q3", "answer": "x", "evidence_pages": "[1418]",
         "evidence_sources": "[]", "answer_format": "Str"},
        {"doc_id": "missing.pdf", "question": "q4", "answer": "y", "evidence_pages": "[1]",
         "evidence_sources": "[]", "answer_format": "Str"},
    ]
    path = tmp_path / "samples.json"
    path.write_text(json.dumps(data))
    records = load_samples(path)
    assert records[0].evidence_pages == [2, 5] and records[0].evidence_sources == ["Table"]
    assert records[0].answerable and not records[1].answerable
    rep = resolve_records(records, _Store())
    assert [r.qid for r in rep.records] == [0, 1]
    assert rep.records[0].doc_id == "abc123"
    assert rep.bad_pages == [(2, "a.pdf", [1418], 10)]
    assert rep.missing_docs == {"missing.pdf": 1}


def test_bad_dataset_is_a_clear_error(tmp_path) -> None:
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(TridentError, match="cannot read dataset"):
        load_samples(p)
    p.write_text(json.dumps([{"question": "no doc"}]))
    with pytest.raises(TridentError, match="record 0"):
        load_samples(p)
