"""The service shares ONE chat engine between all requests and indexes, and batches concurrent asks into it.

The chat backend here refuses to be entered by two threads at once (as vLLM's
offline engine must not be) and is slow enough that concurrent asks overlap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from serve_helpers import build_index, copy_index, uvicorn_thread

from trident_local.models import registry
from trident_local.models.protocols import ChatRequest, ChatResult
from trident_local.serve import Settings, create_app


class OneThreadChat:
    """Answers every request with a short JSON-free text; counts instances; not re-entrant."""

    instances: ClassVar[list[OneThreadChat]] = []
    supports_images = False
    supports_json_schema = True

    def __init__(self, name: str = "one-thread"):
        self.name = name
        self.batches: list[int] = []
        self.threads: set[int] = set()
        self._inside = threading.Lock()
        OneThreadChat.instances.append(self)

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if not self._inside.acquire(blocking=False):
            raise AssertionError("two threads inside the engine")
        try:
            self.threads.add(threading.get_ident())
            self.batches.append(len(requests))
            time.sleep(0.3)  # one engine step, whatever the batch size: what batching buys
            return [ChatResult("The Coastal region's revenue was 95.2 [p. 1].") for _ in requests]
        finally:
            self._inside.release()


@pytest.fixture
def profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(registry._FACTORIES, ("chat", "one-thread"), OneThreadChat)
    monkeypatch.setattr(OneThreadChat, "instances", [])
    p = tmp_path / "one-thread.toml"
    p.write_text('role = "chat"\nbackend = "one-thread"\nweights = ""\n')
    return str(p)


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
