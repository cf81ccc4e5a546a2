"""Local chat generation with transformers: Qwen2.5-VL-class (images + text) and Llama-class (text).

The CPU default and the reference implementation the tests run on tiny models.
No constrained decoding here (``supports_json_schema = False``): callers parse
and repair JSON (see :mod:`trident_local.models.structured`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trident_local.errors import TridentError
from trident_local.models.backends._batching import run_isolating
from trident_local.models.backends._device import pick_device, torch_dtype
from trident_local.models.backends.chat_format import apply_stop, error_result, to_hf_messages
from trident_local.models.budget import IMAGE_TOKENS, ContextBudget, TemplateCounter
from trident_local.models.protocols import ChatRequest, ChatResult

_BNB = {"bnb-4bit": 4, "4bit": 4, "bitsandbytes-4bit": 4, "bnb-8bit": 8, "8bit": 8, "bitsandbytes-8bit": 8}


def bnb_config(quantization: str | None) -> Any:
    """A BitsAndBytesConfig for "bnb-4bit"/"bnb-8bit"; None for no quantization.

    Other schemes (awq, gptq, fp8) are read from the checkpoint's own config by
    transformers, so they need nothing here.
    """
    if not quantization or quantization.lower() not in _BNB:
        return None
    try:
        import bitsandbytes  # noqa: F401
    except ImportError as e:
        raise TridentError(
            f"quantization {quantization!r} needs bitsandbytes: pip install 'trident-local[gpu]'"
        ) from e
    import torch
    from transformers import BitsAndBytesConfig

    if _BNB[quantization.lower()] == 4:
        return BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch.bfloat16 if torch.cuda.is_available() else torch.float32,
        )
    return BitsAndBytesConfig(load_in_8bit=True)


class TransformersChat:
    """`ChatModel` with ``model.generate``; requests with equal sampling settings share a padded batch."""

    supports_json_schema = False

    def __init__(
        self,
        model: str,
        *,
        name: str = "transformers",
        dtype: str = "auto",
        quantization: str | None = None,
        device: str = "auto",
        max_batch_size: int = 8,
        attn_implementation: str | None = None,
        max_pixels: int | None = None,
        min_pixels: int | None = None,
        max_model_len: int | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        from transformers import AutoConfig

        self.name = name
        self.device = pick_device(device)
        self.max_batch_size = max(1, int(max_batch_size))
        load_dir = str(Path(model))
        common: dict[str, Any] = {"local_files_only": True, "trust_remote_code": trust_remote_code}
        config = AutoConfig.from_pretrained(load_dir, **common)
        self.supports_images = getattr(config, "vision_config", None) is not None
        kwargs: dict[str, Any] = {"dtype": torch_dtype(dtype, self.device), **common}
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        kwargs["device_map"] = self.device  # load straight onto the device, no CPU copy first
        qcfg = bnb_config(quantization)
        if qcfg is not None:
            kwargs["quantization_config"] = qcfg
        if self.supports_images:
            from transformers import AutoModelForImageTextToText, AutoProcessor

            self.processor = AutoProcessor.from_pretrained(load_dir, **common)
            self.tokenizer = self.processor.tokenizer
            ip = self.processor.image_processor
            if max_pixels is not None:
                ip.max_pixels = max_pixels
                ip.size["longest_edge"] = max_pixels
            if min_pixels is not None:
                ip.min_pixels = min_pixels
                ip.size["shortest_edge"] = min_pixels
            self.model = AutoModelForImageTextToText.from_pretrained(load_dir, **kwargs)
        else:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(load_dir, **common)
            self.processor = None
            self.model = AutoModelForCausalLM.from_pretrained(load_dir, **kwargs)
        self.model.eval()
        self.tokenizer.padding_side = "left"  # decoder-only batches pad on the left
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        text_cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.max_model_len = int(max_model_len or getattr(text_cfg, "max_position_embeddings", 0) or 32768)
        self._eos_ids = self._eos_token_ids()
        self._lock = threading.Lock()  # generate() is not re-entrant; the server calls from threads

    def _eos_token_ids(self) -> set[int]:
        ids: set[int] = set()
        for src in (getattr(self.model, "generation_config", None), self.tokenizer):
            eos = getattr(src, "eos_token_id", None)
            if isinstance(eos, int):
                ids.add(eos)
            elif isinstance(eos, (list, tuple)):
                ids.update(int(e) for e in eos)
        return ids

    # -- public ---------------------------------------------------------------------------------

    def context_budget(self) -> ContextBudget:
        """max_model_len, counted with the model's tokenizer and chat template (images: the
        processor's pixel cap in 28x28 merge units, else a default)."""
        ip = getattr(self.processor, "image_processor", None)
        max_pixels = getattr(ip, "max_pixels", None) if ip is not None else None
        image_tokens = int(max_pixels) // (28 * 28) + 2 if max_pixels else IMAGE_TOKENS
        return ContextBudget(self.max_model_len, TemplateCounter(self.tokenizer, f"tokenizer ({self.name})",
                                                                 image_tokens))

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        results: list[ChatResult | None] = [None] * len(requests)
        prepared: list[tuple[int, str, list[Any]]] = []
        for i, req in enumerate(requests):
            try:
                prepared.append((i, *self._prompt(req)))
            except Exception as e:  # one bad request must not sink the batch
                results[i] = error_result(req, e)
        groups: dict[tuple[Any, ...], list[tuple[int, str, list[Any]]]] = {}
        for item in prepared:
            p = requests[item[0]].params
            groups.setdefault((p.temperature, p.top_p, p.seed if p.temperature > 0 else None), []).append(
                item
            )
        with self._lock:
            for items in groups.values():
                # similar max_tokens share a batch: a batch decodes until its longest row is done
                items.sort(key=lambda it: requests[it[0]].params.max_tokens)
                for start in range(0, len(items), self.max_batch_size):
                    chunk = items[start : start + self.max_batch_size]
                    done = run_isolating(chunk, lambda c: self._generate(requests, c), error_result)
                    for (i, _, _), res in zip(chunk, done, strict=True):
                        results[i] = res
        return [r if r is not None else ChatResult(text="", error="not run") for r in results]

    # -- internals ------------------------------------------------------------------------------

    def _prompt(self, req: ChatRequest) -> tuple[str, list[Any]]:
        msgs, images = to_hf_messages(req.messages, multimodal=self.supports_images)
        templ = self.processor if self.processor is not None else self.tokenizer
        prompt = templ.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        return prompt, images

    def _encode(self, prompts: list[str], images: list[Any]) -> Any:
        if self.processor is not None:
            return self.processor(text=prompts, images=images or None, padding=True, return_tensors="pt")
        # the chat template already has the BOS token where the model wants one
        return self.tokenizer(prompts, padding=True, return_tensors="pt", add_special_tokens=False)

    def _generate(
        self, requests: Sequence[ChatRequest], chunk: Sequence[tuple[int, str, list[Any]]]
    ) -> list[ChatResult]:
        import torch

        reqs = [requests[i] for i, _, _ in chunk]
        inputs = self._encode([p for _, p, _ in chunk], [im for _, _, ims in chunk for im in ims])
        prompt_lens = inputs["attention_mask"].sum(dim=1).tolist()
        for n in prompt_lens:
            if n >= self.max_model_len:
                raise ValueError(f"prompt has {n} tokens; the model takes at most {self.max_model_len}")
        inputs = inputs.to(self.device)
        p = reqs[0].params
        max_new = max(
            1, min(max(r.params.max_tokens for r in reqs), self.max_model_len - int(max(prompt_lens)))
        )
        gen: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": self.tokenizer.pad_token_id}
        if p.temperature > 0:
            gen.update(do_sample=True, temperature=p.temperature, top_p=p.top_p)
            if p.seed is not None:
                torch.manual_seed(p.seed)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            out = self.model.generate(**inputs, **gen)
        new_tokens = out[:, inputs["input_ids"].shape[1] :].tolist()
        return [
            self._result(r, toks, int(n)) for r, toks, n in zip(reqs, new_tokens, prompt_lens, strict=True)
        ]

    def _result(self, req: ChatRequest, tokens: list[int], prompt_tokens: int) -> ChatResult:
        """Trim one row to its own max_tokens / EOS / stop strings (the batch ran to the longest)."""
        limit = req.params.max_tokens
        kept: list[int] = []
        finish = "length"
        for t in tokens[:limit]:
            kept.append(t)
            if t in self._eos_ids:
                finish = "stop"
                break
        text = self.tokenizer.decode([t for t in kept if t not in self._eos_ids], skip_special_tokens=True)
        text, hit = apply_stop(text, req.params.stop)
        return ChatResult(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(kept),
            finish_reason="stop" if hit else finish,
        )
