"""ColPali-pool page embedding: pages/s of ColQwen2.5 by batch size, through the pool's own embedder.

Random weights in the REAL ColQwen2.5 architecture (vidore/colqwen2.5-base is
Qwen2.5-VL-3B; the config is written out below from the published config.json,
nothing is downloaded), so the timings are those of the real model and the vectors
are noise. Pages are rendered at the index's 144 dpi (``--pdfs``, default the
repository's samples) or read from ``--images``, and cycled to ``--pages``. The
processor is colpali-engine's ColQwen2_5_Processor capped at the colqwen2.5
profile's 768 visual tokens a page, with a tokenizer trained on the fly with the
Qwen-VL special tokens (its text is one fixed prompt: its cost is nil beside the
model's).

For each batch size, best of ``--repeats`` after a warm-up:
- ``pages/s``: ``ColPaliEmbedder.embed_images`` on PIL pages, what the pool's
  ``prepare`` calls: processor on the CPU, forward on the device, vectors back to
  float32 numpy, with the next batch processed in a worker thread meanwhile (the
  default on a GPU);
- ``sequential pages/s``: the same with ``prefetch=False`` (processor, then forward);
- ``forward pages/s``: the model alone on batches processed beforehand;
- ``processor ms/page``: the CPU share (CPU time, all threads);
- peak device memory (CUDA only).

    python benchmarks/page_embedding.py                      # CUDA, the 3B architecture
    python benchmarks/page_embedding.py --tiny --batch-sizes 2 4   # CPU smoke test, toy config

bf16 and sdpa attention on CUDA by default; ``--profile`` prints the top device kernels of one
forward (after the JSON is written). Between runs on one lent GPU the sequential figure moved
10-16%: compare batch sizes within a run.

Recorded (results/page_embedding.json) for the 3B architecture on CUDA (not --tiny); --out
also writes the JSON elsewhere.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))  # tiny_models: the tokenizer and toy config the tests use

from _results import write_result  # noqa: E402
from gpu_caption_throughput import QWEN25_VL_7B  # noqa: E402
from tiny_models import qwen_vl_ids, qwen_vl_tokenizer, tiny_qwen25vl_config  # noqa: E402

from trident_local.models.backends.colpali_embedder import ColPaliEmbedder  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
DPI = 144  # trident_local.config.Config.dpi

# vidore/colqwen2.5-base (= Qwen/Qwen2.5-VL-3B-Instruct) config.json, published architecture numbers:
# the 7B's layout (benchmarks/gpu_caption_throughput.py) with these differences.
QWEN25_VL_3B: dict[str, Any] = {
    "text_config": {
        **QWEN25_VL_7B["text_config"],
        "vocab_size": 151936,
        "hidden_size": 2048,
        "intermediate_size": 11008,
        "num_hidden_layers": 36,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "max_window_layers": 70,
    },
    "vision_config": {**QWEN25_VL_7B["vision_config"], "out_hidden_size": 2048},
    "tie_word_embeddings": True,
}


def build_embedder(
    tiny: bool, device: str, dtype: torch.dtype, max_visual_tokens: int, attn: str | None = None
) -> ColPaliEmbedder:
    """ColQwen2.5 with random weights made directly on ``device``, wrapped as the pool wraps a loaded one."""
    from colpali_engine.models import ColQwen2_5, ColQwen2_5_Processor
    from transformers import Qwen2_5_VLConfig, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    tok = qwen_vl_tokenizer()
    if tiny:
        cfg = tiny_qwen25vl_config(151936, qwen_vl_ids(tok), tok.eos_token_id, tok.pad_token_id)
    else:
        cfg = Qwen2_5_VLConfig(**QWEN25_VL_3B, **qwen_vl_ids(tok))
        cfg.text_config.eos_token_id = tok.eos_token_id
        cfg.text_config.pad_token_id = tok.pad_token_id
    # ColPaliEmbedder's choice unless told: sdpa on CUDA, eager on CPU
    cfg._attn_implementation = attn or ("sdpa" if device.startswith("cuda") else "eager")
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            net = ColQwen2_5(cfg)
    finally:
        torch.set_default_dtype(old)
    size = {"shortest_edge": 4 * 28 * 28, "longest_edge": max_visual_tokens * 28 * 28}
    processor = ColQwen2_5_Processor(
        image_processor=Qwen2VLImageProcessor(size=size),
        tokenizer=tok,
        video_processor=Qwen2VLVideoProcessor(size=size),
        max_num_visual_tokens=max_visual_tokens,
    )
    return ColPaliEmbedder.from_model(net, processor, name="colqwen2.5", device=device)


def load_pages(args: argparse.Namespace) -> tuple[list[Any], float | None]:
    """PIL pages cycled to ``--pages``, and the render cost (CPU ms a page) when rendered here."""
    from PIL import Image

    if args.images:
        files = sorted(
            p for p in Path(args.images).iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg")
        )
        if not files:
            sys.exit(f"{args.images}: no .png/.jpg pages")
        render_ms = None
    else:
        import tempfile

        import pymupdf

        from trident_local.docs.render import render_page

        out = Path(tempfile.mkdtemp(prefix="pages-"))
        files, start = [], time.process_time()
        for pdf in args.pdfs:
            with pymupdf.open(pdf) as doc:
                n = doc.page_count
            for number in range(1, n + 1):
                files.append(render_page(pdf, number, out / f"{Path(pdf).stem}-{number:04d}.png", dpi=DPI))
        render_ms = (time.process_time() - start) * 1e3 / len(files)
    images = []
    for f in files:
        with Image.open(f) as im:
            images.append(im.convert("RGB"))
    return [images[i % len(images)] for i in range(args.pages)], render_ms


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def best_of(repeats: int, device: str, fn: Any) -> float:
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def measure(emb: ColPaliEmbedder, pages: list[Any], batch: int, repeats: int) -> dict[str, Any]:
    device = emb.device
    emb.embed_images(pages[:batch], batch_size=batch)  # warm-up: kernels, allocator
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    total = best_of(repeats, device, lambda: emb.embed_images(pages, batch_size=batch))
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None
    sequential = best_of(repeats, device, lambda: emb.embed_images(pages, batch_size=batch, prefetch=False))
    chunks = [pages[i : i + batch] for i in range(0, len(pages), batch)]
    start = time.process_time()
    processed = [emb.processor.process_images(c) for c in chunks]
    processor_cpu_s = time.process_time() - start
    tokens = sum(int(b["attention_mask"].sum()) for b in processed)
    forward = best_of(repeats, device, lambda: [emb._forward(b) for b in processed])
    return {
        "batch": batch,
        "pages": len(pages),
        "seconds": total,
        "pages_per_s": len(pages) / total,
        "sequential_pages_per_s": len(pages) / sequential,
        "forward_pages_per_s": len(pages) / forward,
        "processor_cpu_ms_per_page": processor_cpu_s * 1e3 / len(pages),
        "tokens_per_page": tokens / len(pages),
        "peak_gib": peak,
    }


def print_profile(emb: ColPaliEmbedder, pages: list[Any]) -> None:
    """Where one forward's time goes: torch.profiler's top kernels by device time."""
    from torch.profiler import ProfilerActivity, profile

    batch = emb.processor.process_images(pages)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if emb.device.startswith("cuda") else [])
    with profile(activities=activities) as prof:
        emb._forward(batch)
    sort = "cuda_time_total" if emb.device.startswith("cuda") else "cpu_time_total"
    print(prof.key_averages().table(sort_by=sort, row_limit=14, max_name_column_width=60))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pdfs", nargs="+", default=sorted(str(p) for p in (REPO / "samples").glob("*.pdf")))
    parser.add_argument("--images", help="a folder of rendered pages (.png/.jpg) instead of --pdfs")
    parser.add_argument("--pages", type=int, default=64, help="pages embedded per run (the set is cycled)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-visual-tokens", type=int, default=768, help="the colqwen2.5 profile's cap")
    parser.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    parser.add_argument("--device", default=None, help="default: cuda when present, else cpu")
    parser.add_argument(
        "--attn", default=None, help="attention implementation (default sdpa on CUDA, eager on CPU)"
    )
    parser.add_argument("--profile", action="store_true", help="print the top device kernels of one forward")
    parser.add_argument(
        "--tiny", action="store_true", help="toy config (CPU smoke test; timings meaningless)"
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--until-oom", action="store_true",
                        help="stop at the first batch size that runs out of device memory, and report it")
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device")
    if not args.tiny and not device.startswith("cuda"):
        parser.error("the 3B architecture needs a GPU; use --tiny for a CPU smoke test")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    pages, render_ms = load_pages(args)
    start = time.perf_counter()
    emb = build_embedder(args.tiny, device, dtype, args.max_visual_tokens, args.attn)
    build_s = time.perf_counter() - start
    n_params = sum(p.numel() for p in emb.model.parameters())
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor() or "cpu"
    print(
        f"{gpu}: ColQwen2.5 {'toy' if args.tiny else '3B'} ({n_params / 1e9:.2f} B parameters, {args.dtype}), "
        f"{len(pages)} pages, built in {build_s:.1f} s; render {render_ms or float('nan'):.1f} CPU-ms/page"
    )
    rows = []
    oom_at = None
    for batch in args.batch_sizes:
        try:
            rows.append(measure(emb, pages, batch, args.repeats))
        except torch.OutOfMemoryError:
            if not args.until_oom:
                raise
            oom_at = batch  # the memory limit: larger batches would not fit either
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
            print(f"  batch {batch:>3}: out of memory; larger batch sizes not tried", flush=True)
            break
        r = rows[-1]
        print(
            f"  batch {batch:>3}: {r['pages_per_s']:7.2f} pages/s (sequential {r['sequential_pages_per_s']:.2f}), "
            f"forward {r['forward_pages_per_s']:7.2f} pages/s, processor {r['processor_cpu_ms_per_page']:6.1f} "
            f"CPU-ms/page, {r['tokens_per_page']:.0f} tokens/page, peak {r['peak_gib'] or float('nan'):.1f} GiB",
            flush=True,
        )
    columns = ["batch", "pages/s", "sequential", "forward", "proc ms/p", "tok/page", "peak GiB"]
    cells = [[str(r["batch"]), f"{r['pages_per_s']:.2f}", f"{r['sequential_pages_per_s']:.2f}",
              f"{r['forward_pages_per_s']:.2f}", f"{r['processor_cpu_ms_per_page']:.1f}",
              f"{r['tokens_per_page']:.0f}", "-" if r["peak_gib"] is None else f"{r['peak_gib']:.1f}"] for r in rows]
    widths = [5, 8, 10, 8, 9, 8, 8]
    head = " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True))
    print(head + "\n" + "-" * len(head))
    for c in cells:
        print(" ".join(f"{v:>{w}}" for v, w in zip(c, widths, strict=True)))
    report = {
        "rows": rows,
        "device": gpu,
        "attn": emb.model.config._attn_implementation,
        "model": "ColQwen2.5 toy" if args.tiny else "ColQwen2.5 (Qwen2.5-VL-3B architecture), random weights",
        "parameters": n_params,
        "dtype": args.dtype,
        "render_cpu_ms_per_page": render_ms,
        "out_of_memory_at_batch": oom_at,
        "build_seconds": build_s,
        "torch": torch.__version__,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        print(f"wrote {args.out}")
    write_result("page_embedding", report, {
        "title": f"{report['model']} on {gpu}, {args.dtype}, attention {report['attn']}, {len(pages)} pages, "
                 f"best of {args.repeats}",
        "columns": columns,
        "rows": cells,
        "notes": "pages/s: the next batch prepared in a worker thread (the GPU default); sequential: prefetch=False; "
                 "forward: the model alone on batches processed beforehand; proc ms/p: the processor's CPU-ms a page.",
    }, args=report["config"], argv=argv, full=not args.tiny and device.startswith("cuda"),
        why_not="--tiny or not on CUDA")
    if args.profile:  # after the report is written: a profiler failure loses no numbers
        print_profile(emb, pages[: args.batch_sizes[-1]])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
