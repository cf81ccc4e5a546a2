"""One model, many callers: concurrent ``chat()`` calls merged into one batch, run from one thread.

For a chat backend that cannot batch across callers itself: the in-process transformers
model, which is not thread-safe and generates a batch much faster than its requests one by
one. (A service runs a vllm profile on vLLM's async engine instead, which batches
continuously, and an OpenAI-compatible server batches what it is sent: see
``runtime.ModelCache`` and ``benchmarks/chat_batching.py``.) :class:`BatchingChat` sits in
front of the shared model: callers enqueue their requests and block; a single dispatcher
thread drains everything queued (up to ``max_batch`` requests, optionally waiting
``max_wait_ms`` for more), sends it to the model as ONE ``chat()`` call and hands each
caller its own results.

At low load nothing waits (the queue holds one caller, which runs at once); under
load, the requests that arrive while the model is busy form the next batch, so
the batch size adapts to the arrival rate. An error fails the callers of
that batch only (the backends already isolate a bad request inside a batch).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from trident_local.models.protocols import ChatModel, ChatRequest, ChatResult


@dataclass(frozen=True)
class BatchPolicy:
    """How :class:`BatchingChat` forms batches."""

    max_batch: int = 64  # requests per engine call (a caller's requests are never split)
    max_wait_ms: float = 0.0  # extra wait for more callers once one is queued (0: drain what is there)

    def __post_init__(self) -> None:
        if self.max_batch < 1 or self.max_wait_ms < 0:
            raise ValueError("max_batch must be >= 1 and max_wait_ms >= 0")


@dataclass
class BatchStats:
    """What the dispatcher did: engine calls, requests, callers merged, and the batch sizes seen."""

    engine_calls: int = 0
    requests: int = 0
    callers: int = 0
    max_batch: int = 0
    sizes: dict[int, int] = field(default_factory=dict)  # batch size -> engine calls of that size

    @property
    def mean_batch(self) -> float:
        return self.requests / self.engine_calls if self.engine_calls else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"engine_calls": self.engine_calls, "requests": self.requests, "callers": self.callers,
                "max_batch": self.max_batch, "mean_batch": round(self.mean_batch, 3),
                "sizes": dict(sorted(self.sizes.items()))}


@dataclass
class _Call:
    requests: list[ChatRequest]
    future: Future[list[ChatResult]]


_STOP = object()


class BatchingChat:
    """A :class:`ChatModel` that merges concurrent callers' requests into single calls to ``inner``."""

    def __init__(
        self,
        inner: ChatModel,
        policy: BatchPolicy | None = None,
        *,
        on_batch: Callable[[int], None] | None = None,
    ):
        self.inner = inner
        self.policy = policy or BatchPolicy()
        self.name = inner.name
        self.supports_images = inner.supports_images
        self.supports_json_schema = inner.supports_json_schema
        self.on_batch = on_batch  # e.g. a metrics histogram's observe(size)
        self.stats = BatchStats()
        self._queue: queue.Queue[Any] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._held: _Call | None = None  # a caller that did not fit the last batch: it leads the next
        self._closed = False

    def __getattr__(self, attr: str) -> Any:  # profile, max_model_len, tokenizer ... of the wrapped model
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    # -- callers ----------------------------------------------------------------------------------
    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """Blocks until this caller's results are back; the engine call itself runs on the dispatcher."""
        requests = list(requests)
        if not requests:
            return []
        if threading.current_thread() is self._thread:  # a stage called from inside a batch: run directly
            return self.inner.chat(requests)
        call = _Call(requests, Future())
        with self._lock:
            if self._closed:
                raise RuntimeError("the chat batcher is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._dispatch, name=f"chat-batcher:{self.name}",
                                                daemon=True)
                self._thread.start()
            self._queue.put(call)
        return call.future.result()

    def close(self) -> None:
        """Stop the dispatcher after the queued calls are served."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._queue.put(_STOP)
        if thread is not None:
            thread.join()

    # -- the dispatcher thread --------------------------------------------------------------------
    def _next_batch(self, first: _Call) -> tuple[list[_Call], bool]:
        """``first`` plus whatever else is queued (or arrives within max_wait_ms), up to max_batch."""
        calls, n, stop = [first], len(first.requests), False
        deadline = time.monotonic() + self.policy.max_wait_ms / 1000.0
        while n < self.policy.max_batch:
            try:
                remaining = deadline - time.monotonic()
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                stop = True
                break
            if n + len(item.requests) > self.policy.max_batch:
                self._held = item  # a caller is never split: it leads the next batch
                break
            calls.append(item)
            n += len(item.requests)
        return calls, stop

    def _dispatch(self) -> None:
        stop = False
        while not stop:
            first, self._held = (self._held, None) if self._held is not None else (self._queue.get(), None)
            if first is _STOP:
                break
            calls, stop = self._next_batch(first)
            flat = [r for c in calls for r in c.requests]
            try:
                results = self.inner.chat(flat)
                if len(results) != len(flat):
                    raise RuntimeError(f"{self.name}: {len(results)} results for {len(flat)} requests")
            except BaseException as e:  # noqa: BLE001 - handed to the callers, the dispatcher lives on
                for c in calls:
                    c.future.set_exception(e)
                continue
            finally:
                self._record(len(flat), len(calls))
            at = 0
            for c in calls:
                c.future.set_result(results[at:at + len(c.requests)])
                at += len(c.requests)

    def _record(self, size: int, callers: int) -> None:
        s = self.stats
        s.engine_calls += 1
        s.requests += size
        s.callers += callers
        s.max_batch = max(s.max_batch, size)
        s.sizes[size] = s.sizes.get(size, 0) + 1
        if self.on_batch is not None:
            self.on_batch(size)
