"""LitTraceQA oracle ladder on the development set (benchmarks/data/littrace_dev.json).

    .venv/bin/python benchmarks/littrace.py                 # build/reuse the index, run the ladder
    .venv/bin/python benchmarks/littrace.py --verify        # only check every gold quote against its PDF page

Builds (or reuses) an index of the set's papers, with the MMLongBench-Doc academic
papers the set does not use as distractors, at --index (default /work/idx/littrace),
runs the three rungs (end-to-end, oracle papers, oracle evidence) with the CPU default
(no chat model: extractive answers) unless --profile names a chat model, prints the
ladder (all records, then per split: "dev" records shaped the CPU default's
heuristics, "check" records were written after it was frozen); --out also writes the JSON
elsewhere. Scores: paper retrieval F1 (canonical ids), evidence grounding precision / recall /
F1 (typed locators: paper + page + object), answer accuracy by format, and joint success.

Recorded (results/littrace.json) on the default --dataset (not with --verify).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import write_result  # noqa: E402

DOCS = ROOT.parent / "shared" / "data" / "mmlongbench-doc" / "documents"
DATASET = ROOT / "benchmarks" / "data" / "littrace_dev.json"
# The other academic papers of MMLongBench-Doc: distractors in the collection.
DISTRACTORS = ["f1f5242528411b262be447e61e2eb10f.pdf", "fd76bbefe469561966e5387aa709c482.pdf"]


def match_form(text: str) -> str:
    """What quotes and pages are compared in: spaces collapsed and hyphens dropped, since a hyphen at a line
    break may belong to the word ("question-answering") or to the layout ("for-malizations")."""
    return re.sub(r"[-\u00ad]\s*", "", " ".join(text.split()))


def verify(dataset: Path = DATASET, docs: Path = DOCS) -> list[str]:
    """Problems with the gold evidence: a quote that is not on its page, a page out of range, a missing file."""
    import pymupdf

    data = json.loads(dataset.read_text(encoding="utf-8"))
    files = data["files"]
    problems, cache = [], {}
    for r in data["records"]:
        for e in r["gold_evidence"]:
            f = files.get(e["paper"])
            if f is None:
                problems.append(f"{r['id']}: no file for paper {e['paper']}")
                continue
            if f not in cache:
                with pymupdf.open(docs / f) as pdf:
                    cache[f] = [match_form(p.get_text()) for p in pdf]
            pages = cache[f]
            if not 1 <= e["page"] <= len(pages):
                problems.append(f"{r['id']}: {f} has {len(pages)} pages, not {e['page']}")
            elif match_form(e["quote"]) not in pages[e["page"] - 1]:
                problems.append(f"{r['id']}: quote not on {f} page {e['page']}: {e['quote'][:80]!r}")
    return problems


def build_index(index_dir: Path, dataset: Path = DATASET):
    from trident_local.config import Config
    from trident_local.index import Index

    files = json.loads(dataset.read_text(encoding="utf-8"))["files"]
    paths = [DOCS / f for f in sorted(set(files.values()))] + [DOCS / f for f in DISTRACTORS]
    idx = Index.create(index_dir, Config(ocr="none"))
    t0 = time.perf_counter()
    rep = idx.add(paths, workers=2)
    print(f"index {index_dir}: {len(rep.files)} files ({sum(f.status == 'skipped' for f in rep.files)} already "
          f"there), {rep.pages_indexed} pages indexed in {time.perf_counter() - t0:.0f} s, {len(rep.failed)} failed")
    return idx


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, default=Path("/work/idx/littrace"))
    ap.add_argument("--dataset", type=Path, default=DATASET)
    ap.add_argument("--profile", default="none", help="chat profile ('none' = extractive CPU default)")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    ap.add_argument("--verify", action="store_true", help="only check the gold quotes against the PDFs")
    args = ap.parse_args()

    problems = verify(args.dataset)
    for p in problems:
        print("GOLD PROBLEM:", p)
    if args.verify:
        print(f"{'no' if not problems else len(problems)} problem(s) in {args.dataset}")
        return 1 if problems else 0

    from trident_local.evaluate.trace_dataset import load_dataset
    from trident_local.evaluate.trace_run import HEADLINE, run_ladder
    from trident_local.trace import Tracer

    idx = build_index(args.index, args.dataset)
    records = load_dataset(args.dataset)
    tracer = Tracer.from_profile(idx, args.profile)
    ids = {r.file_name: r.paper_id for r in tracer.papers.records()}
    files = json.loads(args.dataset.read_text(encoding="utf-8"))["files"]
    wrong = {pid: ids.get(f) for pid, f in files.items() if ids.get(f) != pid}
    if wrong:
        print("paper-id extractor disagrees with the dataset's ids:", wrong)
    t0 = time.perf_counter()
    out = run_ladder(idx, records, tracer=tracer)
    secs = time.perf_counter() - t0
    cols = [("paper_f1", "paper F1"), ("evidence_precision", "evid P"), ("evidence_recall", "evid R"),
            ("evidence_f1", "evid F1"), ("answer_accuracy", "answer acc"), ("joint_success", "joint")]
    print(f"\nLitTraceQA dev ({len(records)} records), answers: {out['answer_mode']} ({out['model']}); "
          f"{secs:.0f} s for all rungs")
    print(f"{'rung':18s}" + "".join(f"{n:>11s}" for _, n in cols))
    for rung, s in out["ladder"].items():
        print(f"{rung:18s}" + "".join(f"{s[k]:11.3f}" for k, _ in cols))
    from trident_local.evaluate.trace_metrics import score_predictions

    by_split: dict[str, dict] = {}
    for split in sorted({r.get("split", "all") for r in records}):
        sub = [r for r in records if r.get("split", "all") == split]
        ids = {r["id"] for r in sub}
        by_split[split] = {rung: {k: v for k, v in score_predictions(
            sub, [p for p in out["predictions"][rung] if p["id"] in ids]).items() if k != "records"}
            for rung in out["ladder"]}
        print(f"\nsplit {split!r} ({len(sub)} records)")
        for rung, s in by_split[split].items():
            print(f"{rung:18s}" + "".join(f"{s[k]:11.3f}" for k, _ in cols))
    e2e = out["ladder"]["end_to_end"]
    print("\nend-to-end by format:",
          {k: round(v["answer_accuracy"], 3) for k, v in e2e["by_format"].items()},
          " evidence recall by type:", {k: f"{v['matched']}/{v['gold']}" for k, v in e2e["evidence_recall_by_type"].items()})
    result = {k: out[k] for k in HEADLINE} | {
        "n": len(records), "answer_mode": out["answer_mode"], "model": out["model"], "seconds": round(secs, 1),
        "index": str(args.index), "dataset": str(args.dataset.relative_to(ROOT)) if args.dataset.is_relative_to(ROOT)
        else str(args.dataset), "gold_problems": problems, "paper_id_mismatches": wrong,
        "ladder": {r: {k: v for k, v in s.items() if k != "records"} for r, s in out["ladder"].items()},
        "by_split": by_split,
        "records": {r: s["records"] for r, s in out["ladder"].items()},
        "predictions": out["predictions"],
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    write_result("littrace", result, lambda: {
        "title": f"LitTraceQA dev ({len(records)} records), answers: {out['answer_mode']} ({out['model']}); "
                 f"{secs:.0f} s for all rungs",
        "columns": ["records", "rung", *(n for _, n in cols)],
        "rows": [[f"all ({len(records)})", rung, *(f"{s[k]:.3f}" for k, _ in cols)] for rung, s in out["ladder"].items()]
        + [[f"split {split!r}", rung, *(f"{s[k]:.3f}" for k, _ in cols)]
           for split, ladder in by_split.items() for rung, s in ladder.items()],
        "notes": "End-to-end answer accuracy by format: " + ", ".join(
            f"{k} {v['answer_accuracy']:.3f}" for k, v in e2e["by_format"].items()) + "; evidence recall by type: "
        + ", ".join(f"{k} {v['matched']}/{v['gold']}" for k, v in e2e["evidence_recall_by_type"].items()) + ".",
    }, args=args, full=args.dataset.resolve() == DATASET.resolve(), why_not="not the default --dataset")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
