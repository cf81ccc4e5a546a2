"""transformers chat backend on a tiny Llama (text) and a tiny Qwen2.5-VL (images), via profiles."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from tiny_models import tiny_chat_profile

from trident_local.models.profiles import build_model
from trident_local.models.protocols import ChatModel, ChatRequest, ImagePart, Message, SamplingParams


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> ChatModel:
    return build_model("chat", tiny_chat_profile(tmp_path_factory.mktemp("llama"), "llama", max_batch_size=2))


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> ChatModel:
    return build_model("chat", tiny_chat_profile(tmp_path_factory.mktemp("qwen"), "qwen25vl"))


def ask(text: str, max_tokens: int = 8, **kw) -> ChatRequest:
    return ChatRequest([Message("user", text)], SamplingParams(max_tokens=max_tokens, **kw))


def test_batch_gives_one_result_per_request_equal_to_single_runs(llama: ChatModel) -> None:
    assert isinstance(llama, ChatModel) and not llama.supports_images and not llama.supports_json_schema
    reqs = [ask("hello there"), ask("Revenue grew 12% in 2023 according to Table 3 " * 3, 5), ask("fox", 3)]
    out = llama.chat(reqs)  # max_batch_size=2: a padded batch of two, then one
    assert len(out) == 3 and all(r.error is None for r in out)
    assert [r.completion_tokens for r in out] == [8, 5, 3]  # random weights never emit EOS this soon
    assert all(r.finish_reason == "length" for r in out)
    assert out[1].prompt_tokens > out[0].prompt_tokens > 0
    assert [r.text for r in out] == [llama.chat([r])[0].text for r in reqs]  # left padding changes nothing


def test_sampling_is_seeded_and_stop_strings_cut(llama: ChatModel) -> None:
    a = llama.chat([ask("tell me", 10, temperature=0.9, seed=7)])[0]
    b = llama.chat([ask("tell me", 10, temperature=0.9, seed=7)])[0]
    assert a.text == b.text
    full = llama.chat([ask("hello there", 12)])[0].text
    stop = full[3:5]
    cut = llama.chat([ask("hello there", 12, stop=[stop])])[0]
    assert cut.text == full[: full.find(stop)] and cut.finish_reason == "stop"


def test_bad_requests_fail_alone(llama: ChatModel) -> None:
    img = ImagePart(Image.new("RGB", (64, 64), "red"))
    too_long = ask("Revenue grew 12% " * 1200)
    out = llama.chat(
        [ask("hi"), ChatRequest([Message("user", ["what is this", img])]), too_long, ask("fox", 2)]
    )
    assert out[0].error is None and out[3].error is None and out[3].completion_tokens == 2
    assert "text only" in (out[1].error or "")
    assert "at most 2048" in (out[2].error or "") and out[2].finish_reason == "error"


def test_vlm_takes_pil_images_and_page_files(qwen: ChatModel, tmp_path: Path) -> None:
    assert qwen.supports_images
    page = tmp_path / "page.png"
    Image.new("RGB", (180, 240), "white").save(page)
    text_only = ChatRequest([Message("user", "what is on the page")], SamplingParams(max_tokens=4))
    with_pil = ChatRequest(
        [
            Message("system", "Be brief."),
            Message("user", [ImagePart(Image.new("RGB", (100, 140), "red")), "what is on the page"]),
        ],
        SamplingParams(max_tokens=4),
    )
    with_file = ChatRequest(
        [Message("user", [ImagePart(path=str(page)), "what is on the page"])], SamplingParams(max_tokens=6)
    )
    two_pages = ChatRequest(
        [Message("user", [ImagePart(path=str(page)), ImagePart(path=str(page)), "what is on the page"])],
        SamplingParams(max_tokens=4),
    )
    out = qwen.chat([text_only, with_pil, with_file, two_pages])
    assert all(r.error is None for r in out), [r.error for r in out]
    assert [r.completion_tokens for r in out] == [4, 4, 6, 4]
    # the tiny processor caps a page at 16 x (28x28 px): 180x240 -> 84x112 -> 3x4 = 12 visual
    # tokens, plus <|vision_start|> and <|vision_end|>
    assert out[2].prompt_tokens - out[0].prompt_tokens == 14
    assert out[3].prompt_tokens - out[2].prompt_tokens == 14
    single = qwen.chat([with_file])[0]
    assert single.text == out[2].text and single.prompt_tokens == out[2].prompt_tokens


@pytest.mark.parametrize("quantization", ["bnb-4bit", "bnb-8bit"])
def test_bitsandbytes_loading(quantization: str, tmp_path: Path) -> None:
    """4/8-bit loading through the same profile path (bitsandbytes runs on CPU too)."""
    pytest.importorskip("bitsandbytes")
    m = build_model("chat", tiny_chat_profile(tmp_path, "llama"), quantization=quantization)
    layer = type(m.model.model.layers[0].self_attn.q_proj).__name__
    assert layer == {"bnb-4bit": "Linear4bit", "bnb-8bit": "Linear8bitLt"}[quantization]
    out = m.chat([ask("hello", 3), ask("Revenue grew", 2)])
    assert [(r.error, r.completion_tokens) for r in out] == [(None, 3), (None, 2)]


@pytest.mark.gpu
def test_vlm_chat_on_cuda(tmp_path: Path) -> None:
    """The transformers backend on a GPU: the tiny Qwen2.5-VL on CUDA takes a page image and answers;
    scripts/gpu_check.sh runs it on a lent GPU."""
    import torch

    qwen = build_model("chat", tiny_chat_profile(tmp_path, "qwen25vl", device="cuda"))
    assert next(qwen.model.parameters()).is_cuda
    page = ImagePart(Image.new("RGB", (180, 240), "white"))
    out = qwen.chat([ChatRequest([Message("user", [page, "what is on the page"])], SamplingParams(max_tokens=6)),
                     ChatRequest([Message("user", "hello")], SamplingParams(max_tokens=4))])
    assert [r.error for r in out] == [None, None]
    assert [r.completion_tokens for r in out] == [6, 4]
    assert out[0].prompt_tokens >= out[1].prompt_tokens + 14  # 12 visual tokens + start and end
    assert torch.cuda.max_memory_allocated() > 0
