"""LitTraceQA datasets and prediction files: load, validate, write.

Dataset: a JSON list of records (or ``{"records": [...]}``)::

    {"id": "lt-001",
     "question": "...",
     "answer_format": "free_form" | "multiple_choice" | "table",
     "choices": ["...", "..."],                  # multiple choice only; letters A, B, ... in order
     "answer": "...",                            # free form: a string (or a list of accepted strings)
                                                 # multiple choice: the letter; table: rows, header first
     "gold_papers": ["2303.05039v2", ...],       # canonical paper ids
     "gold_evidence": [{"paper": "...", "page": 4, "type": "table", "object": "Table 3",
                        "quote": "verbatim text from the page"}],
     "multi_paper": false}

Predictions: JSONL, one ``{"id", "papers", "evidence", "answer"}`` per line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trident_local.docs.paper_meta import normalize_type
from trident_local.errors import TridentError

FORMATS = ("free_form", "multiple_choice", "table")
EVIDENCE_TYPES = ("table", "figure", "equation", "citation_context", "text_span")


def validate_record(r: Mapping[str, Any]) -> list[str]:
    """Problems with one dataset record ([] when it is valid)."""
    errs: list[str] = []
    rid = r.get("id", "?")
    for k in ("id", "question", "answer_format", "answer", "gold_papers", "gold_evidence"):
        if k not in r:
            errs.append(f"{rid}: missing {k!r}")
    if errs:
        return errs
    fmt = r["answer_format"]
    if fmt not in FORMATS:
        errs.append(f"{rid}: answer_format {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt == "multiple_choice":
        ch = r.get("choices")
        if not isinstance(ch, list) or len(ch) < 2:
            errs.append(f"{rid}: multiple_choice needs a list of at least 2 choices")
        elif not (isinstance(r["answer"], str) and len(r["answer"].strip()) == 1
                  and "A" <= r["answer"].strip().upper() < chr(ord("A") + len(ch))):
            errs.append(f"{rid}: multiple_choice answer must be a letter A..{chr(ord('A') + len(ch) - 1)}")
    if fmt == "table" and not (isinstance(r["answer"], list) and len(r["answer"]) >= 2
                               and all(isinstance(row, list) for row in r["answer"])):
        errs.append(f"{rid}: table answer must be a list of rows (header first, at least one body row)")
    if not isinstance(r["gold_papers"], list) or not r["gold_papers"]:
        errs.append(f"{rid}: gold_papers must be a non-empty list")
    if not isinstance(r["gold_evidence"], list) or not r["gold_evidence"]:
        errs.append(f"{rid}: gold_evidence must be a non-empty list")
    else:
        papers = {str(p).lower() for p in r["gold_papers"]}
        for i, e in enumerate(r["gold_evidence"]):
            if not isinstance(e, Mapping):
                errs.append(f"{rid}: gold_evidence[{i}] is not an object")
                continue
            for k in ("paper", "page", "type"):
                if k not in e:
                    errs.append(f"{rid}: gold_evidence[{i}] missing {k!r}")
            if "type" in e and normalize_type(e["type"]) not in EVIDENCE_TYPES:
                errs.append(f"{rid}: gold_evidence[{i}] type {e['type']!r} is not one of {', '.join(EVIDENCE_TYPES)}")
            if not isinstance(e.get("page"), int) or e.get("page", 0) < 1:
                errs.append(f"{rid}: gold_evidence[{i}] page must be a 1-based integer")
            if str(e.get("paper", "")).lower() not in papers:
                errs.append(f"{rid}: gold_evidence[{i}] paper {e.get('paper')!r} is not in gold_papers")
    if "multi_paper" in r and bool(r["multi_paper"]) != (len(set(r["gold_papers"])) > 1):
        errs.append(f"{rid}: multi_paper disagrees with the number of gold_papers")
    return errs


def load_dataset(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a dataset; raises TridentError listing every problem found."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TridentError(f"no dataset file {p}") from None
    except json.JSONDecodeError as e:
        raise TridentError(f"{p} is not valid JSON ({e})") from None
    records = data.get("records") if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise TridentError(f"{p}: expected a list of records (or {{'records': [...]}})")
    errs = [e for r in records for e in (validate_record(r) if isinstance(r, Mapping) else ["a record is not an object"])]
    ids = [r.get("id") for r in records if isinstance(r, Mapping)]
    dup = sorted({str(i) for i in ids if ids.count(i) > 1})
    if dup:
        errs.append(f"duplicate ids: {', '.join(dup)}")
    if errs:
        shown = "; ".join(errs[:10]) + (f"; ... {len(errs) - 10} more" if len(errs) > 10 else "")
        raise TridentError(f"{p}: invalid dataset: {shown}")
    for r in records:
        r.setdefault("multi_paper", len(set(r["gold_papers"])) > 1)
    return records


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """Predictions JSONL (blank lines skipped); a bad line is an error naming its number."""
    p = Path(path)
    if not p.exists():
        raise TridentError(f"no predictions file {p}")
    out = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise TridentError(f"{p}:{n}: not valid JSON ({e})") from None
        if not isinstance(obj, dict) or "id" not in obj:
            raise TridentError(f"{p}:{n}: each line must be an object with an 'id'")
        out.append(obj)
    return out


def write_predictions(path: str | Path, preds: Sequence[Mapping[str, Any]]) -> None:
    from trident_local.atomic import atomic_write_text

    atomic_write_text(Path(path), "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in preds))
