"""What regions cost: per no-model ask, per page layout (from the index's line boxes vs the source PDF),
per search (its rows ranked by their embeddings as well as their words), and in the index (the line
boxes stored with each text block).

    .venv/bin/python benchmarks/regions_cost.py --index /work/idx/fb \\
        --dataset ../shared/data/financebench-dev/dataset.json
    .venv/bin/python benchmarks/regions_cost.py --index /work/idx/mmlb \\
        --dataset ../shared/data/mmlongbench-doc/samples.json --questions 60

For each of the first --questions answerable questions (inside its own document, no chat model, the
default pool and rerank, ``--min-confidence 0`` so every answer is located) it records the ask's
``regions`` timing and its share of the whole ask. For every page those answers cite it then times
the page's layout built from the stored line boxes and from the source PDF's words (cache cleared,
alternated, same process); it times `trident search` (K = 5) for each question with its rows ranked by
words alone and by their embeddings too (row vectors not cached, and cached: rotating order), and, for the documents involved, the size of document.json and the time
to load it with and without the line boxes. The index must have been built with line boxes (any
index built since they were stored); one without them reads the PDF in both columns.

Recorded (results/regions_cost.json) on the FinanceBench development filings (dense tables, the
costly case), all 34 questions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _results import write_result  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def _search_cost(index, recs) -> dict[str, list[float]]:
    """`trident search` (K = 5) per question, its rows ranked by words alone, and also by the rows' embeddings
    with the row vectors not cached (cold) and cached (warm), in rotating order."""
    import functools
    import importlib

    from trident_local.regions import attach

    pipeline = importlib.import_module("trident_local.search")  # the module (the package exports its function)
    real = pipeline.search_regions
    out: dict[str, list[float]] = {"words": [], "cold": [], "warm": []}
    for i, r in enumerate(recs):
        modes = ["words", "cold", "warm"]
        for how in modes[i % 3:] + modes[:i % 3]:
            if how == "cold":
                attach.row_vectors.cache_clear()
            elif how == "warm":  # the pages' rows embedded once beforehand
                pipeline.search(index, r.question, doc=[r.doc_id], k=5)
            pipeline.search_regions = functools.partial(real, by_embedding=False) if how == "words" else real
            try:
                t0 = time.perf_counter()
                pipeline.search(index, r.question, doc=[r.doc_id], k=5)
                out[how].append(1000 * (time.perf_counter() - t0))
            finally:
                pipeline.search_regions = real
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", default="/work/idx/fb")
    ap.add_argument("--dataset", default=str(ROOT.parent / "shared/data/financebench-dev/dataset.json"))
    ap.add_argument("--questions", type=int, default=34)
    ap.add_argument("--out", default=None, help="also write the JSON here")
    args = ap.parse_args()

    from trident_local.docs.model import Document
    from trident_local.evaluate.mmlongbench import load_samples, resolve_records
    from trident_local.generate.ask import AskOptions, ask
    from trident_local.index import Index
    from trident_local.query import Query
    from trident_local.regions.layout import _pdf_layout, page_layout

    index = Index.open(args.index)
    index.models.use_profile("chat", "none")
    recs = [r for r in resolve_records(load_samples(args.dataset), index.store).records
            if r.answerable][: args.questions]
    ask(index, Query(recs[0].question), AskOptions(), doc=[recs[0].doc_id])  # models loaded, not timed
    regions_ms, share, pages = [], [], set()
    for r in recs:
        res = ask(index, Query(r.question, min_confidence=0.0), AskOptions(), doc=[r.doc_id])
        t = res.timings
        regions_ms.append(1000 * t.get("regions", 0.0))
        share.append(t.get("regions", 0.0) / t["total"] if t["total"] else 0.0)
        pages |= {(c.doc_id, c.page) for c in res.answer.citations}
    stored_ms, pdf_ms = [], []
    for rounds in range(2):  # alternated, so drift on a busy machine falls on both columns
        for doc_id, page in sorted(pages):
            entry = index.store.manifest.documents[doc_id]
            p = index.store.document(doc_id).page(page)
            order = ("stored", "pdf") if rounds % 2 == 0 else ("pdf", "stored")
            for how in order:
                _pdf_layout.cache_clear()
                t0 = time.perf_counter()
                if how == "stored":
                    page_layout(entry.path, page, p.blocks, (p.width, p.height))
                    stored_ms.append(1000 * (time.perf_counter() - t0))
                else:
                    page_layout(entry.path, page)
                    pdf_ms.append(1000 * (time.perf_counter() - t0))
    search_ms = _search_cost(index, recs)
    sizes, loads = {"with": 0, "without": 0}, {"with": 0.0, "without": 0.0}
    for doc_id in sorted({d for d, _ in pages}):
        raw = (index.store.doc_dir(doc_id) / "document.json").read_text(encoding="utf-8")
        data = json.loads(raw)
        full = json.dumps(data)  # both serialised alike
        for pg in data["pages"]:
            for b in pg["blocks"]:
                b.pop("lines", None)
        bare = json.dumps(data)
        for key, text in (("with", full), ("without", bare)):
            sizes[key] += len(text.encode())
            t0 = time.perf_counter()
            Document.from_dict(json.loads(text))
            loads[key] += time.perf_counter() - t0
    figures = {
        "questions": len(recs), "pages": len(pages), "documents": len({d for d, _ in pages}),
        "regions_ms_median": statistics.median(regions_ms), "regions_ms_p90": pct(regions_ms, 0.9),
        "regions_share_of_ask_median": statistics.median(share),
        "layout_ms_stored_median": statistics.median(stored_ms), "layout_ms_pdf_median": statistics.median(pdf_ms),
        "layout_pdf_over_stored": statistics.median(pdf_ms) / max(1e-9, statistics.median(stored_ms)),
        "document_json_bytes_with_lines": sizes["with"], "document_json_bytes_without": sizes["without"],
        "document_json_growth": sizes["with"] / max(1, sizes["without"]) - 1,
        "document_load_ratio": loads["with"] / max(1e-9, loads["without"]),
        **{f"search_ms_{how}_median": statistics.median(ms) for how, ms in search_ms.items()},
    }
    rows = [
        ["regions per no-model ask, median / p90 (ms)", f"{figures['regions_ms_median']:.1f} / "
                                                         f"{figures['regions_ms_p90']:.1f}"],
        ["regions' share of the ask, median", f"{100 * figures['regions_share_of_ask_median']:.1f}%"],
        ["page layout from the index's line boxes, median (ms)", f"{figures['layout_ms_stored_median']:.2f}"],
        ["page layout from the PDF's words, median (ms)", f"{figures['layout_ms_pdf_median']:.2f}"],
        ["PDF / index", f"{figures['layout_pdf_over_stored']:.1f}x"],
        ["document.json size with line boxes", f"{100 * figures['document_json_growth']:+.0f}%"],
        ["document load time with / without line boxes", f"{figures['document_load_ratio']:.2f}x"],
        ["search (K = 5) with rows ranked by words alone, median (ms)", f"{figures['search_ms_words_median']:.1f}"],
        ["... and by the rows' embeddings, pages not searched before", f"{figures['search_ms_cold_median']:.1f}"],
        ["... and by the rows' embeddings, pages searched before", f"{figures['search_ms_warm_median']:.1f}"],
    ]
    title = (f"Regions' cost on {Path(args.index).name}: {len(recs)} no-model asks, {len(pages)} cited pages, "
             f"{figures['documents']} documents")
    print(title)
    for name, val in rows:
        print(f"  {name:<55} {val}")
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    recorded = args.questions >= 34 and "financebench" in args.dataset
    write_result("regions_cost", figures, lambda: {"title": title, "columns": ["what", "measured"], "rows": rows,
                                                   "notes": "Ratios are within one process; absolute times "
                                                            "depend on the machine and its load."},
                 args=args, full=recorded, why_not="not the recorded configuration (all 34 FinanceBench questions)")


if __name__ == "__main__":
    main()
