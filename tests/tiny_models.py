"""Tiny random-weight models for tests: built from a config, saved, loaded back by user code.

Each ``make_tiny_*`` writes a complete model folder (config, safetensors,
tokenizer, processor where the family has one) that the SAME loaders a user
runs read back. Tokenizers are trained on the fly with ``tokenizers`` (about
0.1 s), or, for BGE-M3's XLM-R, taken from nothing at all: a WordLevel vocab.
Everything takes well under a second per model on CPU; weights are random, so
tests check plumbing (batching, shapes, parsing, errors), never quality.

Folders are cached per process by (kind, directory) so that many tests can
share one build through a session-scoped tmp dir.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
LLAMA_SPECIAL = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
]

# The structure of Qwen2-VL / Qwen2.5-VL's published chat template (images as
# <|vision_start|><|image_pad|><|vision_end|>), so the backend meets the same
# message format as with the real processor.
QWEN_VL_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Llama-3's published template, minus the tool-calling branches.
LLAMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)

_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Revenue grew 12% in 2023 according to Table 3 on page 14.",
    'JSON: {"pages": [1, 2, 3], "answer": "yes", "score": 0.5}',
    "Figure 2 shows the accuracy of the model on long documents.",
    "Question answering over PDF pages with citations and evidence.",
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`",
]

# Weights drawn wider than the usual 0.02 so that greedy output varies with the input
# (at 0.02 a random model repeats one token, and batching tests would prove nothing).
INIT_STD = 0.3

_BUILT: dict[tuple[str, str], Path] = {}
_SHARED: Path | None = None


def shared_dir() -> Path:
    """One temp folder per test process, so every test module reuses the same tiny builds."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Path(tempfile.mkdtemp(prefix="trident-tiny-"))
        atexit.register(shutil.rmtree, _SHARED, True)
    return _SHARED


def train_bpe_tokenizer(special_tokens: list[str], vocab_size: int = 400):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on a few sentences (about 0.1 s)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok)


def _once(kind: str, out: Path, build) -> Path:
    out = Path(out)
    key = (kind, str(out.resolve()))
    if key not in _BUILT or not (out / "config.json").exists():
        out.mkdir(parents=True, exist_ok=True)
        build(out)
        _BUILT[key] = out
    return out


def make_tiny_llama(dir: str | Path) -> Path:
    """A 2-layer, 64-wide Llama (head_dim 32) with a Llama-3-style chat template (text-only chat)."""

    def build(out: Path) -> None:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        tok = train_bpe_tokenizer(LLAMA_SPECIAL)
        tok.bos_token, tok.eos_token, tok.pad_token = "<|begin_of_text|>", "<|eot_id|>", "<|end_of_text|>"
        tok.chat_template = LLAMA3_CHAT_TEMPLATE
        cfg = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=2048,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
            tie_word_embeddings=True,
            initializer_range=INIT_STD,
        )
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg).eval()
        model.generation_config.eos_token_id = tok.eos_token_id
        model.generation_config.pad_token_id = tok.pad_token_id
        model.save_pretrained(out)
        tok.save_pretrained(out)

    return _once("llama", Path(dir), build)


def qwen_vl_tokenizer():
    tok = train_bpe_tokenizer(QWEN_SPECIAL)
    tok.eos_token, tok.pad_token = "<|im_end|>", "<|endoftext|>"
    tok.chat_template = QWEN_VL_CHAT_TEMPLATE
    return tok


def _qwen_vl_image_processor():
    # 28x28-pixel merge units; cap pages at 16 units so a test image is 16 visual tokens.
    size = {"shortest_edge": 4 * 28 * 28, "longest_edge": 16 * 28 * 28}
    from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    return Qwen2VLImageProcessor(size=size), Qwen2VLVideoProcessor(size=size)


def qwen_vl_ids(tok) -> dict[str, int]:
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL}
    return {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }


def tiny_qwen25vl_config(vocab_size: int, token_ids: dict[str, int], eos: int, pad: int):
    """Qwen2.5-VL at toy size: 2 text layers and 2 vision blocks of width 64, head_dim 32 (what GPU kernels take)."""
    from transformers import Qwen2_5_VLConfig

    return Qwen2_5_VLConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 6, 6]},
            "bos_token_id": pad,
            "eos_token_id": eos,
            "pad_token_id": pad,
            "initializer_range": INIT_STD,
        },
        vision_config={
            "depth": 2,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_heads": 2,
            "out_hidden_size": 64,
            "fullatt_block_indexes": [1],
            "window_size": 56,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        tie_word_embeddings=True,
        initializer_range=INIT_STD,
        **token_ids,
    )


def make_tiny_qwen25vl(dir: str | Path) -> Path:
    """A tiny Qwen2.5-VL (image + text chat) with its processor and the Qwen-VL chat template."""

    def build(out: Path) -> None:
        import torch
        from transformers import Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor

        tok = qwen_vl_tokenizer()
        image_proc, video_proc = _qwen_vl_image_processor()
        cfg = tiny_qwen25vl_config(len(tok), qwen_vl_ids(tok), tok.eos_token_id, tok.pad_token_id)
        torch.manual_seed(0)
        model = Qwen2_5_VLForConditionalGeneration(cfg).eval()
        model.generation_config.eos_token_id = tok.eos_token_id
        model.generation_config.pad_token_id = tok.pad_token_id
        model.save_pretrained(out)
        proc = Qwen2_5_VLProcessor(
            image_processor=image_proc,
            tokenizer=tok,
            video_processor=video_proc,
            chat_template=QWEN_VL_CHAT_TEMPLATE,
        )
        proc.save_pretrained(out)

    return _once("qwen25vl", Path(dir), build)


def make_tiny_colqwen2(dir: str | Path) -> Path:
    """A tiny ColQwen2 (Qwen2-VL backbone + 128-d projection) and its ColQwen2Processor."""

    def build(out: Path) -> None:
        import torch
        from colpali_engine.models import ColQwen2, ColQwen2Processor
        from transformers import Qwen2VLConfig

        tok = qwen_vl_tokenizer()
        image_proc, video_proc = _qwen_vl_image_processor()
        cfg = Qwen2VLConfig(
            text_config={
                "vocab_size": len(tok),
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "num_key_value_heads": 1,
                "max_position_embeddings": 4096,
                "rope_parameters": {
                    "rope_type": "default",
                    "rope_theta": 10000.0,
                    "mrope_section": [4, 6, 6],
                },
                "bos_token_id": tok.pad_token_id,
                "eos_token_id": tok.eos_token_id,
                "pad_token_id": tok.pad_token_id,
            },
            vision_config={
                "depth": 2,
                "embed_dim": 64,
                "hidden_size": 64,
                "mlp_ratio": 2,
                "num_heads": 2,
                "patch_size": 14,
                "spatial_merge_size": 2,
                "temporal_patch_size": 2,
            },
            **qwen_vl_ids(tok),
        )
        torch.manual_seed(0)
        model = ColQwen2(cfg).eval()
        model.save_pretrained(out)
        proc = ColQwen2Processor(image_processor=image_proc, tokenizer=tok, video_processor=video_proc)
        proc.save_pretrained(out)

    return _once("colqwen2", Path(dir), build)


def make_tiny_colqwen25(dir: str | Path) -> Path:
    """A tiny ColQwen2.5 (Qwen2.5-VL backbone + 128-d projection) and its ColQwen2_5_Processor."""

    def build(out: Path) -> None:
        import torch
        from colpali_engine.models import ColQwen2_5, ColQwen2_5_Processor

        tok = qwen_vl_tokenizer()
        image_proc, video_proc = _qwen_vl_image_processor()
        cfg = tiny_qwen25vl_config(len(tok), qwen_vl_ids(tok), tok.eos_token_id, tok.pad_token_id)
        torch.manual_seed(0)
        ColQwen2_5(cfg).eval().save_pretrained(out)
        ColQwen2_5_Processor(
            image_processor=image_proc, tokenizer=tok, video_processor=video_proc
        ).save_pretrained(out)

    return _once("colqwen25", Path(dir), build)


def make_tiny_colpali(dir: str | Path) -> Path:
    """A tiny ColPali (PaliGemma: SigLIP 28-px images -> 4 image tokens, Gemma text) and its processor."""

    def build(out: Path) -> None:
        import torch
        from colpali_engine.models import ColPali, ColPaliProcessor
        from transformers import PaliGemmaConfig, SiglipImageProcessor

        tok = train_bpe_tokenizer(["<pad>", "<eos>", "<bos>", "<unk>", "<image>"])
        tok.pad_token, tok.eos_token, tok.bos_token, tok.unk_token = "<pad>", "<eos>", "<bos>", "<unk>"
        image_proc = SiglipImageProcessor(size={"height": 28, "width": 28})
        image_proc.image_seq_length = 4  # (28 / 14) ** 2 patches
        cfg = PaliGemmaConfig(
            text_config={
                "vocab_size": len(tok),
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "num_key_value_heads": 1,
                "head_dim": 32,
                "pad_token_id": tok.pad_token_id,
                "initializer_range": INIT_STD,
            },
            vision_config={
                "hidden_size": 32,
                "intermediate_size": 64,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "image_size": 28,
                "patch_size": 14,
                "projection_dim": 64,
            },
            image_token_index=tok.convert_tokens_to_ids("<image>"),
            projection_dim=64,
            hidden_size=64,
        )
        torch.manual_seed(0)
        ColPali(cfg).eval().save_pretrained(out)
        ColPaliProcessor(image_processor=image_proc, tokenizer=tok).save_pretrained(out)

    return _once("colpali", Path(dir), build)


def make_tiny_bge_m3(dir: str | Path) -> Path:
    """A tiny XLM-RoBERTa saved the way BGE-M3 is (plus colbert_linear.pt and sparse_linear.pt)."""

    def build(out: Path) -> None:
        import torch
        from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer

        # A Unigram vocab like XLM-R's sentencepiece one: specials, whole words, then single characters.
        words = sorted({w.strip(".,:;!?()[]{}\"'") for s in _CORPUS for w in s.split()} - {""})
        chars = sorted({c for s in _CORPUS for c in s if not c.isspace()})
        pieces = [
            ("<s>", 0.0),
            ("<pad>", 0.0),
            ("</s>", 0.0),
            ("<unk>", 0.0),
            ("<mask>", 0.0),
            ("\u2581", -3.0),
        ]
        pieces += [("\u2581" + w, -2.0) for w in words] + [(c, -6.0) for c in chars]
        tok = XLMRobertaTokenizer(vocab=pieces, model_max_length=512)
        cfg = XLMRobertaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=514,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
        )
        torch.manual_seed(0)
        XLMRobertaModel(cfg).eval().save_pretrained(out)
        tok.save_pretrained(out)
        torch.save(torch.nn.Linear(32, 32).state_dict(), out / "colbert_linear.pt")
        torch.save(torch.nn.Linear(32, 1).state_dict(), out / "sparse_linear.pt")

    return _once("bge_m3", Path(dir), build)


def toml_value(v: object) -> str:
    """A Python value as TOML (strings, numbers, booleans, lists, inline tables)."""
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(v)


def tiny_chat_profile(
    tmp_path: str | Path, kind: str = "llama", backend: str = "transformers", **options: object
) -> str:
    """Write a chat profile .toml under ``tmp_path`` for a tiny model; returns its path.

    ``build_model("chat", path)`` accepts it. The weights are built once per
    process in :func:`shared_dir`; ``options`` land in the profile's [options]
    table (e.g. ``max_batch_size=2``).
    """
    makers = {"llama": make_tiny_llama, "qwen25vl": make_tiny_qwen25vl}
    if kind not in makers:
        raise ValueError(f"kind must be one of {sorted(makers)}")
    weights = makers[kind](shared_dir() / f"tiny-{kind}")
    if backend == "transformers":
        options.setdefault("device", "cpu")
    lines = [
        f'name = "tiny-{kind}"',
        'role = "chat"',
        f'backend = "{backend}"',
        f"weights = {json.dumps(str(weights))}",
        'dtype = "float32"',
        "",
        "[options]",
    ]
    lines += [f"{k} = {toml_value(v)}" for k, v in options.items()]
    path = Path(tmp_path) / f"tiny-{kind}-{backend}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)
