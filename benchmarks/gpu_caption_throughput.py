"""Page-captioning throughput of Qwen2.5-VL-7B with transformers: vision, prefill and decode.

Random weights in the REAL Qwen2.5-VL-7B-Instruct architecture (the config is
written out below from the published config.json, nothing is downloaded), so
the timings are those of the real model; the captions are noise. One batch of
``--batch`` page-captioning requests (default 32): one rendered page image each
(capped at ``--max-pixels``, as the vLLM profile caps it) plus a fixed-length
instruction, then exactly ``--new-tokens`` generated tokens each (EOS is
suppressed, so every row decodes the same length).

Measured, best of ``--repeats`` after one warm-up run:
- vision: the vision tower alone on the batch's pages;
- prefill: ``generate`` with one new token (vision + text prefill + first token);
- total: ``generate`` with ``--new-tokens``; decode = total - prefill.
Throughputs: prefill tokens/s = prompt tokens (text + visual) / prefill time;
decode tokens/s = batch x (new_tokens - 1) / decode time. Peak GPU memory too.

    python benchmarks/gpu_caption_throughput.py                 # CUDA, the 7B architecture
    python benchmarks/gpu_caption_throughput.py --tiny          # CPU smoke test, toy config

This is transformers' eager-mode generate, the CPU/portable path of the
``transformers`` backend; the vLLM engine is the production path on GPUs. --out (default
benchmarks/results/gpu_caption_throughput-<arch>-<time>.json, git-ignored) keeps every run.

Recorded (results/gpu_caption_throughput.json) for the 7B architecture on CUDA (not --tiny).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(RESULTS.parent))

from _results import write_result  # noqa: E402

# Qwen/Qwen2.5-VL-7B-Instruct config.json (published architecture numbers).
QWEN25_VL_7B: dict[str, Any] = {
    "text_config": {
        "vocab_size": 152064,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "hidden_act": "silu",
        "max_position_embeddings": 128000,
        "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
        "use_sliding_window": False,
        "sliding_window": 32768,
        "max_window_layers": 28,
        "bos_token_id": 151643,
        "eos_token_id": 151645,
    },
    "vision_config": {
        "depth": 32,
        "hidden_act": "silu",
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "in_channels": 3,
        "out_hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "tokens_per_second": 2,
    },
    "image_token_id": 151655,
    "video_token_id": 151656,
    "vision_start_token_id": 151652,
    "vision_end_token_id": 151653,
    "tie_word_embeddings": False,
}

# Same structure at toy size, for --tiny on CPU (head_dim 32, mrope sections summing to 16).
TINY: dict[str, Any] = {
    "text_config": {
        "vocab_size": 512,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 4096,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 6, 6]},
        "bos_token_id": 500,
        "eos_token_id": 501,
    },
    "vision_config": {
        "depth": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_heads": 2,
        "out_hidden_size": 64,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 56,
        "fullatt_block_indexes": [1],
    },
    "image_token_id": 505,
    "video_token_id": 506,
    "vision_start_token_id": 502,
    "vision_end_token_id": 503,
    "tie_word_embeddings": True,
}
IM_START, IM_END, NEWLINE = 151644, 151645, 198  # <|im_start|>, <|im_end|>, "\n" in Qwen's vocab


@dataclass
class Result:
    arch: str
    device: str
    dtype: str
    attn: str
    batch: int
    new_tokens: int
    page_px: str
    visual_tokens_per_page: int
    prompt_tokens_per_request: int
    params_b: float
    vision_s: float
    prefill_s: float
    total_s: float
    decode_s: float
    prefill_tok_s: float
    decode_tok_s: float
    pages_per_s: float
    peak_mem_gib: float
    torch: str
    transformers: str
    gpu: str


def build_model(cfg: dict[str, Any], dtype: torch.dtype, device: str, attn: str) -> Any:
    """Random weights straight on the device (no CPU copy of 16 GB first)."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    config = Qwen2_5_VLConfig(**json.loads(json.dumps(cfg)))
    config._attn_implementation = attn
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(config, dtype=dtype, attn_implementation=attn)
    return model.eval()


def page_inputs(
    cfg: dict[str, Any], batch: int, width: int, height: int, max_pixels: int, text_tokens: int
) -> Any:
    """Processor-made pixel values for ``batch`` rendered pages, and chat-formatted input ids.

    The ids follow Qwen's chat template token by token (system, user with
    <|vision_start|> <|image_pad|>*n <|vision_end|> and an instruction,
    assistant prompt); the instruction's words are random in-vocabulary ids,
    since no tokenizer is downloaded.
    """
    from PIL import Image, ImageDraw
    from transformers import Qwen2VLImageProcessor

    proc = Qwen2VLImageProcessor(size={"shortest_edge": 4 * 28 * 28, "longest_edge": max_pixels})
    pages = []
    for i in range(batch):
        im = Image.new("RGB", (width, height), "white")
        d = ImageDraw.Draw(im)
        for y in range(40, height - 40, 28):  # lines of "text" so pages are not blank
            d.rectangle((60, y, 60 + (i * 37 + y * 13) % (width - 120), y + 12), fill="black")
        pages.append(im)
    pix = proc(images=pages, return_tensors="pt")
    grid = pix["image_grid_thw"]
    n_visual = int(grid[0].prod()) // 4
    vocab = cfg["text_config"]["vocab_size"]
    special = {
        cfg["image_token_id"],
        cfg["video_token_id"],
        cfg["vision_start_token_id"],
        cfg["vision_end_token_id"],
    }
    g = torch.Generator().manual_seed(0)
    words = [int(t) for t in torch.randint(0, min(vocab, 150000) - 16, (text_tokens,), generator=g)]
    words = [w if w not in special else w + 7 for w in words]
    im_start, im_end, nl = (IM_START, IM_END, NEWLINE) if vocab > IM_START else (507, 501, 10)
    row = (
        [im_start, *words[:6], im_end, nl, im_start, *words[6:8], nl, cfg["vision_start_token_id"]]
        + [cfg["image_token_id"]] * n_visual
        + [cfg["vision_end_token_id"], *words[8:], im_end, nl, im_start, *words[:2], nl]
    )
    ids = torch.tensor([row] * batch)
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "pixel_values": pix["pixel_values"],
        "image_grid_thw": grid,
    }, n_visual


def timed(fn: Any, device: str) -> float:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t


def run(args: argparse.Namespace) -> Result:
    tiny = args.tiny
    device = args.device or ("cpu" if tiny else "cuda")
    if device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("CUDA is not available: run on a GPU machine, or pass --tiny for the CPU smoke test")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[
        args.dtype or ("fp32" if tiny else "bf16")
    ]
    cfg = TINY if tiny else QWEN25_VL_7B
    model = build_model(cfg, dtype, device, args.attn)
    n_params = sum(p.numel() for p in model.parameters())
    inputs, n_visual = page_inputs(
        cfg, args.batch, args.width, args.height, args.max_pixels, args.text_tokens
    )
    inputs = {k: v.to(device) for k, v in inputs.items()}
    pad = cfg["text_config"]["eos_token_id"]

    def generate(n: int) -> Any:
        with torch.inference_mode():
            return model.generate(
                **inputs,
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=False,
                pad_token_id=pad,
                use_cache=True,
            )

    def vision() -> Any:
        with torch.inference_mode():
            return model.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"])

    out = generate(args.new_tokens)  # warm-up (kernels, allocator) and a shape check
    assert out.shape == (args.batch, inputs["input_ids"].shape[1] + args.new_tokens), out.shape
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    t_vis = min(timed(vision, device) for _ in range(args.repeats))
    t_pre = min(timed(lambda: generate(1), device) for _ in range(args.repeats))
    t_tot = min(timed(lambda: generate(args.new_tokens), device) for _ in range(args.repeats))
    t_dec = max(t_tot - t_pre, 1e-9)
    prompt_len = int(inputs["input_ids"].shape[1])
    import transformers

    return Result(
        arch="tiny-qwen2.5-vl" if tiny else "qwen2.5-vl-7b",
        device=device,
        dtype=str(dtype).replace("torch.", ""),
        attn=args.attn,
        batch=args.batch,
        new_tokens=args.new_tokens,
        page_px=f"{args.width}x{args.height}",
        visual_tokens_per_page=n_visual,
        prompt_tokens_per_request=prompt_len,
        params_b=round(n_params / 1e9, 3),
        vision_s=round(t_vis, 4),
        prefill_s=round(t_pre, 4),
        total_s=round(t_tot, 4),
        decode_s=round(t_dec, 4),
        prefill_tok_s=round(args.batch * prompt_len / t_pre, 1),
        decode_tok_s=round(args.batch * (args.new_tokens - 1) / t_dec, 1),
        pages_per_s=round(args.batch / t_tot, 3),
        peak_mem_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if device.startswith("cuda")
        else 0.0,
        torch=torch.__version__,
        transformers=transformers.__version__,
        gpu=torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor() or "cpu",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="toy config on CPU (smoke test)")
    ap.add_argument("--device", default=None, help="default: cuda, or cpu with --tiny")
    ap.add_argument(
        "--dtype", choices=["bf16", "fp16", "fp32"], default=None, help="default: bf16, fp32 with --tiny"
    )
    ap.add_argument("--attn", default="sdpa", help="sdpa, flash_attention_2 (if installed) or eager")
    ap.add_argument(
        "--batch", type=int, default=None, help="requests in the batch (default 32; 4 with --tiny)"
    )
    ap.add_argument(
        "--new-tokens", type=int, default=None, help="tokens generated per request (default 128; 8 --tiny)"
    )
    ap.add_argument("--text-tokens", type=int, default=64, help="instruction tokens per request")
    ap.add_argument("--width", type=int, default=None, help="page width in px (default 1240 = A4 at 150 dpi)")
    ap.add_argument("--height", type=int, default=None, help="page height in px (default 1754)")
    ap.add_argument(
        "--max-pixels", type=int, default=None, help="page pixel cap (default 1280*28*28, as the profile)"
    )
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--out", default=None, help="JSON path (default benchmarks/results/gpu_caption_throughput-*.json)"
    )
    args = ap.parse_args(argv)
    tiny_defaults = {"batch": 4, "new_tokens": 8, "width": 224, "height": 308, "max_pixels": 16 * 28 * 28}
    full_defaults = {
        "batch": 32,
        "new_tokens": 128,
        "width": 1240,
        "height": 1754,
        "max_pixels": 1280 * 28 * 28,
    }
    for k, v in (tiny_defaults if args.tiny else full_defaults).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.new_tokens < 2:
        ap.error("--new-tokens must be at least 2 (decode = total - prefill)")

    res = run(args)
    rows = [
        ("model", f"{res.arch} ({res.params_b} B params, {res.dtype}, attn={res.attn}) on {res.gpu}"),
        (
            "batch",
            f"{res.batch} pages of {res.page_px} px -> {res.visual_tokens_per_page} visual tokens each",
        ),
        ("prompt", f"{res.prompt_tokens_per_request} tokens/request; {res.new_tokens} new tokens/request"),
        ("vision tower", f"{res.vision_s:.3f} s"),
        ("prefill (+1st token)", f"{res.prefill_s:.3f} s   {res.prefill_tok_s:,.0f} prompt tok/s"),
        ("decode", f"{res.decode_s:.3f} s   {res.decode_tok_s:,.1f} tok/s"),
        ("total", f"{res.total_s:.3f} s   {res.pages_per_s:.2f} pages/s"),
        ("peak GPU memory", f"{res.peak_mem_gib} GiB" if res.device.startswith("cuda") else "n/a (CPU)"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    out = (
        Path(args.out)
        if args.out
        else RESULTS / f"gpu_caption_throughput-{res.arch}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(asdict(res), indent=2) + "\n")
    print(f"wrote {out}")
    write_result("gpu_caption_throughput", asdict(res), {
        "title": f"{res.arch}, batch {res.batch}, {res.new_tokens} new tokens, best of {args.repeats}",
        "columns": ["measure", "value"],
        "rows": [list(r) for r in rows],
        "notes": "",
    }, args=args, argv=argv, full=not args.tiny and res.device.startswith("cuda"),
        why_not="--tiny or not on CUDA")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
