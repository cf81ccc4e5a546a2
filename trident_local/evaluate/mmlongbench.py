"""MMLongBench-Doc adapter: records from its samples JSON, documents resolved by file name.

Records whose gold pages lie beyond the document's length are known annotation
defects (printed book page numbers, a stray "1418"): they are reported and
skipped, never "fixed".
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

from trident_local.errors import TridentError
from trident_local.store.index_store import IndexStore

NOT_ANSWERABLE = "Not answerable"


@dataclass
class QARecord:
    qid: int  # position in the samples file
    doc_name: str  # the benchmark's doc_id = PDF file name
    question: str
    answer: str
    answer_format: str
    evidence_pages: list[int]
    evidence_sources: list[str]
    doc_type: str = ""
    doc_id: str = ""  # our content-hash id once resolved
    justification: str = ""  # FinanceBench: how the answer was obtained (the line items it reads)

    @property
    def answerable(self) -> bool:
        return self.answer != NOT_ANSWERABLE and self.answer_format != "None"


@dataclass
class LoadReport:
    records: list[QARecord] = field(default_factory=list)
    missing_docs: dict[str, int] = field(default_factory=dict)  # doc name -> questions skipped
    bad_pages: list[tuple[int, str, list[int], int]] = field(default_factory=list)  # qid, doc, pages, n_pages


def _literal_list(text: str | list) -> list:
    if isinstance(text, list):
        return text
    try:
        value = ast.literal_eval(text) if text else []
    except (ValueError, SyntaxError):
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def load_samples(path: str | Path) -> list[QARecord]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise TridentError(f"cannot read dataset {path}: {e}") from e
    if not isinstance(raw, list):
        raise TridentError(f"{path}: expected a JSON list of MMLongBench-Doc records")
    out = []
    for i, r in enumerate(raw):
        try:
            out.append(QARecord(
                qid=i,
                doc_name=r["doc_id"],
                question=r["question"],
                answer=str(r["answer"]),
                answer_format=str(r.get("answer_format", "")),
                evidence_pages=[int(p) for p in _literal_list(r.get("evidence_pages", "[]"))],
                evidence_sources=[str(s) for s in _literal_list(r.get("evidence_sources", "[]"))],
                doc_type=r.get("doc_type", ""),
                justification=str(r.get("justification") or ""),
            ))
        except (KeyError, TypeError, ValueError) as e:
            raise TridentError(f"{path}: record {i} is not an MMLongBench-Doc record ({e})") from e
    return out


def resolve_records(records: list[QARecord], store: IndexStore) -> LoadReport:
    """Attach our doc ids; drop (and report) records of documents not indexed or with impossible pages."""
    by_name = {e.file_name: e for e in store.entries(["ingest"])}
    rep = LoadReport()
    for r in records:
        entry = by_name.get(r.doc_name)
        if entry is None:
            rep.missing_docs[r.doc_name] = rep.missing_docs.get(r.doc_name, 0) + 1
            continue
        if any(p < 1 or p > entry.n_pages for p in r.evidence_pages):
            rep.bad_pages.append((r.qid, r.doc_name, r.evidence_pages, entry.n_pages))
            continue
        r.doc_id = entry.doc_id
        rep.records.append(r)
    return rep
