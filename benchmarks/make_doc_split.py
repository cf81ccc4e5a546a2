"""Write a seeded document split of MMLongBench-Doc: whole documents go to "calib" or "test".

    .venv/bin/python benchmarks/make_doc_split.py ../shared/data/mmlongbench-doc/samples.json \\
        --seed 0 --calib-fraction 0.5 --out benchmarks/data/mmlb_doc_split.json

Thresholds and weights are tuned on "calib" only and reported on "test", so a
number on "test" comes from documents nothing was fitted on. Splitting by
document (not by question) keeps the questions of one document together.
The committed split (benchmarks/data/mmlb_doc_split.json: seed 0, 46 "calib" / 47 "test"
documents, shuffled after sorting) is the one every fitted threshold uses (the no-model
answer's abstention, the rerank gate); ``trident eval qa --split-file
benchmarks/data/mmlb_doc_split.json --split calib|test`` runs one split.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def doc_split(doc_ids: list[str], seed: int, calib_fraction: float) -> dict[str, list[str]]:
    """A seeded split of the distinct document ids (sorted first, so the input order does not matter)."""
    if not 0.0 < calib_fraction < 1.0:
        raise ValueError("--calib-fraction must be between 0 and 1")
    order = sorted(set(doc_ids))
    random.Random(seed).shuffle(order)
    n = round(len(order) * calib_fraction)
    return {"calib": sorted(order[:n]), "test": sorted(order[n:])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("samples", help="MMLongBench-Doc samples.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--calib-fraction", type=float, default=0.5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "data" / "mmlb_doc_split.json"))
    args = ap.parse_args(argv)
    records = json.loads(Path(args.samples).read_text(encoding="utf-8"))
    split = doc_split([r["doc_id"] for r in records], args.seed, args.calib_fraction)
    out = {"seed": args.seed, "calib_fraction": args.calib_fraction, "source": Path(args.samples).name, **split}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(split['calib'])} calib / {len(split['test'])} test documents")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
