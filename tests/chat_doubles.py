"""A chat model that must not be entered by two threads at once, as vLLM's offline engine must not."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from trident_local.models.protocols import ChatRequest, ChatResult


class NotReentrantChat:
    """Replies ``reply(request)`` to each request after ``delay`` seconds per call (one engine step,
    whatever the batch size); records batch sizes and calling threads; fails on concurrent entry."""

    supports_images = False
    supports_json_schema = True

    def __init__(self, name: str = "not-reentrant", delay: float = 0.05,
                 reply: Callable[[ChatRequest], str] | None = None):
        self.name, self.delay = name, delay
        self.reply = reply or (lambda r: r.messages[0].text().upper())
        self.batches: list[int] = []
        self.threads: set[int] = set()
        self._inside = threading.Lock()

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if not self._inside.acquire(blocking=False):
            raise AssertionError("the engine was entered by two threads at once")
        try:
            self.threads.add(threading.get_ident())
            self.batches.append(len(requests))
            time.sleep(self.delay)
            return [ChatResult(self.reply(r), prompt_tokens=1, completion_tokens=1) for r in requests]
        finally:
            self._inside.release()


def backend_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, factory: type) -> str:
    """A chat profile file naming ``factory`` as backend ``backend``, registered for this test only
    (``factory.instances``, where the class counts its instances, starts empty)."""
    from trident_local.models import registry

    monkeypatch.setitem(registry._FACTORIES, ("chat", backend), factory)
    if hasattr(factory, "instances"):
        monkeypatch.setattr(factory, "instances", [])
    path = tmp_path / f"{backend}.toml"
    path.write_text(f'role = "chat"\nbackend = "{backend}"\nweights = ""\n')
    return str(path)
