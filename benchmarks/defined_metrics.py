"""Metrics the question defines, and single line items it asks for, answered without a model: how many
are answered, and how many right.

    .venv/bin/python benchmarks/defined_metrics.py --fb-index /work/idx/fb --mmlb-index /work/idx/mmlb --fit

Runs the no-model ``ask`` (default pool, rerank and answer strategy, ``--min-confidence 0``) on every
question of the FinanceBench development split and of MMLongBench-Doc that states a definition
("Inventory turnover ratio is defined as: ..."), the questions ``trident_local/generate/formula.py``
answers by computing the definition from the document's line items, every question that names a standard
metric without defining it ("the FY2018 - FY2020 3 year average of capex as a % of revenue", a % margin,
a year-over-year change, a CAGR, a named ratio such as the current ratio or DPO, "X to Y ratio";
``trident_local/generate/metric_forms.py``), and every question that asks for one
line item of one fiscal year ("what is the year end FY2019 total amount of inventories ...?"), which
``trident_local/generate/line_item.py`` reads from its row. Right: the value within the
precision the question asks for (half a unit of its last decimal) or 1% of the gold value, whichever
is larger; the gold answers' "$", "%" and thousands separators are ignored. Also reported: the
answer's region hit on the grounding labels of those questions (`trident eval grounding`: a returned
region holds a gold box's centre or lies in a gold line-item row), and the answer stage's time, beside
the same questions' with the tables path switched off (alternated, same process); and the same for
`trident search` (K = 5): its region hit@5 and time with the line items' pages ranked first
(the ``line-items`` finder of ``trident_local/search.py``) and with the pool's ranking alone. With --fit, the table answers'
confidence model (``TABLE_CONFIDENCE``) is fitted on the answered questions of both sets and checked per set,
also with a model fitted on the other set alone; the table shows the confidence the shipped model gives. The FinanceBench questions, and
the MMLongBench-Doc 10-K questions, were read while the modules were built: these are development figures,
not held-out ones.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _results import write_result  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def gold_number(answer: str) -> float | None:
    m = re.fullmatch(r"\s*\$?\s*(-?[\d,]*\.?\d+)\s*%?\s*", answer)
    return float(m.group(1).replace(",", "")) if m else None


def right(gold: str, text: str) -> bool:
    g, p = gold_number(gold), gold_number(text)
    if g is None or p is None:
        return False
    places = len(gold.split(".")[1].rstrip("% ")) if "." in gold else 0
    return abs(g - p) <= max(0.5 * 10 ** -places, 0.01 * abs(g)) + 1e-9


def _timed_pair(run, module, i: int):
    """``run()`` as it is and with the tables path switched off (the evidence path alone), in alternating
    order (the first of a pair lays out the pages both read): the result as it is, and the answer stage's
    seconds without the tables path."""
    real = module.defined_metric

    def plain() -> float:
        module.defined_metric = lambda *a, **k: None
        try:
            return run().timings["answer"]
        finally:
            module.defined_metric = real

    if i % 2:
        res = run()
        return res, plain()
    plain_s = plain()
    return run(), plain_s


def _timed_search(index, question: str, doc_id: str, i: int):
    """`trident search` (K = 5) for ``question`` as it is and with the line-item pages switched off (the
    pool's ranking alone), alternated, each after an untimed run of both (the pages' row vectors cached,
    so both are timed warm): each one's regions and seconds."""
    from trident_local.search import search

    def one(on: bool):
        t0 = time.perf_counter()
        found = search(index, question, doc=[doc_id], k=5, finders="all" if on else "none")
        return [r.to_dict() for f in found for r in f.regions], time.perf_counter() - t0

    one(True), one(False)
    if i % 2:
        with_items = one(True)
        return with_items, one(False)
    pool_alone = one(False)
    return one(True), pool_alone


def score(index_dir: str, dataset: Path, kind: str) -> dict:
    """``kind``: "defined" (a defined or standard metric) or "item" (one line item)."""
    from trident_local.evaluate.grounding import gold_boxes, score_regions
    from trident_local.evaluate.mmlongbench import load_samples, resolve_records
    from trident_local.generate import evidence_answer
    from trident_local.generate.ask import ask
    from trident_local.generate.formula import computes
    from trident_local.generate.line_item import item_question
    from trident_local.index import Index
    from trident_local.query import Query

    index = Index.open(index_dir)
    index.models.use_profile("chat", "none")
    rows = []
    for rec in resolve_records(load_samples(dataset), index.store).records:
        defined = computes(rec.question)
        if defined != (kind == "defined") or (kind == "item" and item_question(rec.question) is None):
            continue
        res, plain_s = _timed_pair(lambda q=rec.question, d=rec.doc_id: ask(index, Query(q, min_confidence=0.0),
                                                                            doc=[d]), evidence_answer, len(rows))
        a = res.answer
        computed = ("computed from" in a.gate) if defined else ("line item" in a.gate)
        row = {"qid": rec.qid, "gold": rec.answer, "answer": a.candidate or a.text, "computed": computed,
               "right": computed and right(rec.answer, a.candidate or a.text),
               "answer_s": res.timings["answer"], "evidence_path_s": plain_s,
               "confidence": a.confidence, "lex": (a.features or {}).get("lex")}
        gold = gold_boxes(index, rec) if rec.evidence_pages else []
        if gold:
            def area(page: int, _doc=rec.doc_id) -> float:
                p = index.store.document(_doc).page(page)
                return p.width * p.height

            row["answer_hit"] = score_regions([r for c in a.citations for r in c.regions], gold, area)["hit"]
        (regions, row["search_s"]), (plain_regions, row["pool_search_s"]) = _timed_search(
            index, rec.question, rec.doc_id, len(rows))
        if gold:
            row["search_hit"] = score_regions(regions, gold, area)["hit"]
            row["pool_search_hit"] = score_regions(plain_regions, gold, area)["hit"]
        rows.append(row)
    labelled = [r for r in rows if "answer_hit" in r]
    answered = [r for r in rows if r["computed"]]
    n = max(1, len(rows))
    return {"questions": len(rows), "computed": sum(r["computed"] for r in rows),
            "answer_ms": 1000 * sum(r["answer_s"] for r in rows) / n,
            "evidence_path_ms": 1000 * sum(r["evidence_path_s"] for r in rows) / n,
            "right": sum(r["right"] for r in rows), "labelled": len(labelled),
            "confidence": sum(r["confidence"] for r in answered) / len(answered) if answered else None,
            "answer_hit": sum(r["answer_hit"] for r in labelled) / len(labelled) if labelled else None,
            "search_ms": 1000 * sum(r["search_s"] for r in rows) / n,
            "pool_search_ms": 1000 * sum(r["pool_search_s"] for r in rows) / n,
            "search_hit": sum(r["search_hit"] for r in labelled) / len(labelled) if labelled else None,
            "pool_search_hit": sum(r["pool_search_hit"] for r in labelled) / len(labelled) if labelled else None,
            "rows": rows}


def fit_table_confidence(figures: dict) -> dict:
    """The table answers' confidence model (``TABLE_CONFIDENCE`` in trident_local/generate/evidence_answer.py)
    fitted on the answered questions of both sets, and, for each set, its share right against the mean
    confidence that model gives it and that a model fitted on the other set alone gives it: does the
    calibration hold across the two distributions?"""
    from trident_local.generate.answer_confidence import fit

    by_set: dict[str, list[dict]] = {}
    for name, f in figures.items():
        if name != "seconds":
            by_set.setdefault(name.split(",")[0], []).extend(r for r in f["rows"] if r["computed"])

    def fitted(rows: list[dict]):
        return fit([{"lex": r["lex"]} for r in rows], [r["right"] for r in rows])

    def mean(values) -> float:
        values = list(values)
        return sum(values) / len(values)

    pooled = fitted([r for rows in by_set.values() for r in rows])
    pooled.threshold = None  # the abstention threshold stays the passage answers' (see evidence_answer.py)
    checks = {}
    for name, rows in by_set.items():
        other = fitted([r for n, rs in by_set.items() if n != name for r in rs])
        checks[name] = {"answered": len(rows), "right": mean(r["right"] for r in rows),
                        "confidence": mean(pooled.probability({"lex": r["lex"]}) for r in rows),
                        "confidence_fitted_on_the_other_set": mean(other.probability({"lex": r["lex"]}) for r in rows),
                        "brier": mean((pooled.probability({"lex": r["lex"]}) - r["right"]) ** 2 for r in rows)}
    return {"model": pooled.to_dict(), "by_set": checks}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fb-index", default="/work/idx/fb")
    ap.add_argument("--mmlb-index", default="/work/idx/mmlb")
    ap.add_argument("--out", default=None, help="also write the JSON here")
    ap.add_argument("--fit", action="store_true",
                    help="also fit the table answers' confidence model on both sets and print it (paste it into "
                         "TABLE_CONFIDENCE in trident_local/generate/evidence_answer.py to ship it)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sets = {"FinanceBench dev": (args.fb_index, DATA / "financebench-dev" / "dataset.json"),
            "MMLongBench-Doc": (args.mmlb_index, DATA / "mmlongbench-doc" / "samples.json")}
    figures = {f"{name}, {label}": score(index, dataset, kind) for name, (index, dataset) in sets.items()
               for kind, label in (("defined", "defined or standard metric"), ("item", "one line item"))}
    figures["seconds"] = round(time.perf_counter() - t0, 1)
    if args.fit:
        fitted = fit_table_confidence(figures)
        print(json.dumps(fitted, indent=1))
        figures["table_confidence_fit"] = fitted
    columns = ["set, question", "questions", "answered from the tables", "right", "confidence shown (mean)",
               "answer hit (labelled)",
               "answer stage ms (evidence path alone)", "search hit@5 (pool alone)", "search ms (pool alone)"]
    rows = [[name, str(f["questions"]), str(f["computed"]), str(f["right"]),
             "-" if f["confidence"] is None else f"{f['confidence']:.2f}",
             "-" if f["answer_hit"] is None else f"{f['answer_hit']:.3f} ({f['labelled']})",
             f"{f['answer_ms']:.0f} ({f['evidence_path_ms']:.0f})" if f["questions"] else "-",
             "-" if f["search_hit"] is None else f"{f['search_hit']:.3f} ({f['pool_search_hit']:.3f})",
             f"{f['search_ms']:.0f} ({f['pool_search_ms']:.0f})" if f["questions"] else "-"]
            for name, f in figures.items() if name not in ("seconds", "table_confidence_fit")]
    title = "Defined metrics and one-item questions, no chat model, default pool, --min-confidence 0"
    print(title)
    print(" | ".join(columns))
    for r in rows:
        print(" | ".join(r))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    write_result("defined_metrics", figures, lambda: {
        "title": title, "columns": columns, "rows": rows,
        "notes": "Development figures: the FinanceBench questions, and the MMLongBench-Doc questions that ask for "
                 "one line item or name a ratio, were read while the modules were built (the named ratios' "
                 "conventions, e.g. a return over the closing balance, were checked against their gold answers)."},
        args=args)


if __name__ == "__main__":
    main()
