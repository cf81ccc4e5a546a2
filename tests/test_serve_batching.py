"""The service shares ONE chat engine between all requests and indexes, and batches concurrent asks into it.

The chat backend here refuses to be entered by two threads at once (as vLLM's
offline engine must not be) and is slow enough that concurrent asks overlap.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from chat_doubles import NotReentrantChat, backend_profile
from serve_helpers import build_index, copy_index, uvicorn_thread

from trident_local.serve import Settings, create_app

pytestmark = pytest.mark.integration


class OneThreadChat(NotReentrantChat):
    """One engine step of 0.3 s, whatever the batch size (what batching buys); counts instances."""

    instances: ClassVar[list[OneThreadChat]] = []

    def __init__(self, name: str = "one-thread"):
        super().__init__(name, 0.3, lambda _: "The Coastal region's revenue was 95.2 [p. 1].")
        OneThreadChat.instances.append(self)


@pytest.fixture
def profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return backend_profile(tmp_path, monkeypatch, "one-thread", OneThreadChat)


def test_concurrent_asks_on_two_indexes_share_one_engine_in_batches(tmp_path: Path, profile: str) -> None:
    built = build_index(tmp_path / "built", tmp_path / "pdfs")
    a, b = copy_index(built, tmp_path / "a"), copy_index(built, tmp_path / "b")
    settings = Settings(indexes={"a": str(a), "b": str(b)}, chat=profile, model_slots=8, log_json=False)
    questions = [f"Which region led with 2,900 megawatts? ({i})" for i in range(8)]
    with uvicorn_thread(create_app(settings)) as url:
        def ask(i: int) -> dict:
            body = {"question": questions[i], "answer": "plain", "rerank": "none"}
            r = httpx.post(f"{url}/api/indexes/{'ab'[i % 2]}/ask", json=body, timeout=120)
            assert r.status_code == 200, r.text
            return r.json()

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(ask, range(8)))
        metrics = httpx.get(f"{url}/metrics", timeout=30).text
    assert len(OneThreadChat.instances) == 1  # one engine for both indexes and every request
    engine = OneThreadChat.instances[0]
    assert len(engine.threads) == 1  # entered from the batcher's one thread only
    assert all(r["answer"]["mode"].startswith("plain:") for r in results)
    assert max(engine.batches) > 1  # concurrent asks reached the engine together
    assert len(engine.batches) < sum(engine.batches)
    assert 'trident_model_batch_size_count{role="chat"}' in metrics
