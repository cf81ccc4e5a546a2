"""What regions cost at indexing: CPU seconds of indexing the same PDFs with and without the line boxes.

    .venv/bin/python benchmarks/regions_index_cost.py --data ../shared/data/mmlongbench-doc/documents --rounds 2
    .venv/bin/python benchmarks/regions_index_cost.py --sets text,scanned --rounds 1

Regions need one thing from the index: each text block's line boxes (``TextBlock.lines``, read from the
same ``get_text("dict")`` call that gives the blocks' text; tesseract's line boxes for scanned pages,
from the same OCR run). Everything else a region is built from (rows, cells, headers) is computed at
query time from those boxes (benchmarks/regions_cost.py measures that side). This benchmark indexes
each set of PDFs (``text`` and ``scanned`` of benchmarks/indexing.py) into a fresh index, in this
process, parsing inline (``workers=1``) with the default pools (bm25 + dense), once as it is and once
with the line boxes dropped as they are read (the text blocks of the parse, and the OCR engine's
``ocr_lines`` turned off so that the scanned pages take ``image_to_string``, as before line boxes
existed), alternating which goes first, ``--rounds`` times. It reports the CPU seconds of the
process (all threads) and of its children (tesseract), the wall seconds, the median ratio of the
pairs, and document.json's size.

Recorded (results/regions_index_cost.json) with both sets and at least 2 rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _results import write_result  # noqa: E402
from indexing import SETS  # noqa: E402


@contextlib.contextmanager
def without_line_boxes() -> Iterator[None]:
    """Index as before line boxes were stored: blocks without ``lines``, OCR by plain text."""
    from trident_local.docs import ingest
    from trident_local.models.backends.tesseract_ocr import TesseractOCR

    blocks, lines_of = ingest._blocks, TesseractOCR.ocr_lines
    ingest._blocks = lambda page: [dataclasses.replace(b, lines=[]) for b in blocks(page)]
    del TesseractOCR.ocr_lines  # _ocr_page then reads the page with plain ocr()
    try:
        yield
    finally:
        ingest._blocks = blocks
        TesseractOCR.ocr_lines = lines_of


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of its finished children (tesseract runs as one)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def index_once(files: list[Path], boxes: bool) -> dict[str, float]:
    """Index ``files`` into a fresh index: process CPU and wall seconds, document.json bytes."""
    from trident_local.index import Index

    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "idx")
        ctx = contextlib.nullcontext() if boxes else without_line_boxes()
        with ctx:
            c0, w0 = cpu_seconds(), time.perf_counter()
            report = index.add(files, workers=1)
            cpu, wall = cpu_seconds() - c0, time.perf_counter() - w0
        failed = [f.path for f in report.files if f.status == "failed"]
        if failed:
            raise SystemExit(f"indexing failed: {failed}")
        size = sum(p.stat().st_size for p in (Path(tmp) / "idx" / "docs").glob("*/document.json"))
    return {"cpu_s": cpu, "wall_s": wall, "document_json_bytes": size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "mmlongbench-doc" / "documents")
    ap.add_argument("--sets", default="text,scanned", help="comma-separated: text, scanned")
    ap.add_argument("--rounds", type=int, default=2, help="pairs per set, alternating which goes first")
    args = ap.parse_args()

    figures: dict[str, dict] = {}
    rows = []
    warm = [args.data / SETS["text"][0]]
    index_once(warm, True)  # imports, loads the embedder and warms the caches: out of the timings
    for name in args.sets.split(","):
        files = [args.data / f for f in SETS[name]]
        runs: dict[str, list[dict]] = {"with": [], "without": []}
        for r in range(args.rounds):
            order = [True, False] if r % 2 == 0 else [False, True]
            for boxes in order:
                runs["with" if boxes else "without"].append(index_once(files, boxes))
                print(f"{name} round {r + 1}: {'with' if boxes else 'without'} line boxes "
                      f"{runs['with' if boxes else 'without'][-1]['cpu_s']:.1f} CPU s", flush=True)
        ratio = statistics.median(a["cpu_s"] / b["cpu_s"] for a, b in zip(runs["with"], runs["without"], strict=True))
        wall = statistics.median(a["wall_s"] / b["wall_s"] for a, b in zip(runs["with"], runs["without"], strict=True))
        size = runs["with"][0]["document_json_bytes"] / max(1, runs["without"][0]["document_json_bytes"])
        figures[name] = {"files": SETS[name], "runs": runs, "cpu_ratio": ratio, "wall_ratio": wall,
                         "document_json_ratio": size}
        cpu_w = statistics.median(x["cpu_s"] for x in runs["with"])
        cpu_wo = statistics.median(x["cpu_s"] for x in runs["without"])
        rows.append([name, f"{len(files)}", f"{cpu_wo:.1f}", f"{cpu_w:.1f}", f"{100 * (ratio - 1):+.1f}%",
                     f"{100 * (wall - 1):+.1f}%", f"{100 * (size - 1):+.0f}%"])
    columns = ["set", "PDFs", "CPU s without line boxes", "CPU s with", "CPU (median of pairs)",
               "wall (median of pairs)", "document.json"]
    title = f"Indexing with and without the line boxes regions are built from ({args.rounds} alternated pairs)"
    print(title)
    print(" | ".join(columns))
    for r in rows:
        print(" | ".join(r))
    full = args.rounds >= 2 and {"text", "scanned"} <= set(args.sets.split(","))
    write_result("regions_index_cost", figures, lambda: {
        "title": title, "columns": columns, "rows": rows,
        "notes": "In one process, inline parsing (workers=1), default pools (bm25 + dense); CPU seconds of the "
                 "process (all threads) and of tesseract's processes. The scanned set's OCR reads line boxes with image_to_data against "
                 "image_to_string without them."}, args=args, full=full,
        why_not="not the recorded configuration (both sets, at least 2 rounds)")


if __name__ == "__main__":
    main()
