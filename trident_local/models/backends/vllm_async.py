"""vLLM's async engine (``AsyncLLM``): many threads call ``chat()`` at once, the engine batches them.

What a service wants from one shared engine. The offline ``LLM`` runs a whole
batch to its end before it takes the next, and is not thread-safe, so a service
on it must queue callers and merge them (what :mod:`~trident_local.models.batcher`
did). ``AsyncLLM`` schedules continuously instead: a request added while others
decode joins the running batch at the next step, and finishes without waiting for
the longest one. This backend runs the engine's event loop in one daemon thread;
``chat()`` hands its requests to that loop and blocks, so any number of request
threads share the engine with nothing of ours in between.

Prompts are rendered by the engine's own renderer with the options ``LLM.chat``
uses (chat template, no extra special tokens), and sampling, JSON schemas, images
and the context budget are :class:`~trident_local.models.backends.vllm_chat.VLLMChat`'s,
so the two engines decode the same requests the same way.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from trident_local.models.backends.chat_format import error_result
from trident_local.models.backends.vllm_chat import Prepared, VLLMChat, to_result
from trident_local.models.protocols import ChatRequest, ChatResult


class VLLMAsyncChat(VLLMChat):
    """`ChatModel` on ``vllm.v1.engine.async_llm.AsyncLLM``; safe to call from many threads."""

    concurrent = True  # batches across callers itself: the runtime puts nothing in front of it
    on_request: Callable[[int], None] | None = None  # called with the requests in the engine as one is added

    def _start_engine(self) -> Any:
        from vllm.config import StructuredOutputsConfig
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        kw = dict(self.engine_kwargs)
        if isinstance(kw.get("structured_outputs_config"), dict):  # LLM() converts this dict; AsyncLLM does not
            kw["structured_outputs_config"] = StructuredOutputsConfig(**kw["structured_outputs_config"])
        kw.setdefault("disable_log_stats", True)
        self._ids = itertools.count()
        self._inflight = 0
        self.max_inflight = 0  # most requests in the engine at once so far (1 means it never batched)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"vllm-async:{self.name}", daemon=True)
        self._thread.start()

        async def start() -> Any:  # built on its loop, so the engine's output handler runs there
            return AsyncLLM.from_engine_args(AsyncEngineArgs(**kw))

        try:
            return asyncio.run_coroutine_threadsafe(start(), self._loop).result()
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            raise

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if self.llm is None or not self._loop.is_running():  # a call after close() would wait forever
            raise RuntimeError(f"{self.name}: the async engine is shut down")
        results, ready = self.prepare(requests)
        if ready:
            done = asyncio.run_coroutine_threadsafe(self._generate_all(ready), self._loop).result()
            for (i, _, _), res in zip(ready, done, strict=True):
                results[i] = res
        return [r if r is not None else ChatResult(text="", error="not run") for r in results]

    async def _generate_all(self, items: Sequence[Prepared]) -> list[ChatResult]:
        return list(await asyncio.gather(*(self._generate(item) for item in items)))

    async def _generate(self, item: Prepared) -> ChatResult:
        """One request, start to finish; an error is this request's result, not its neighbours'."""
        from vllm.renderers import ChatParams

        _, conversation, sampling = item
        engine = self.llm
        self._inflight += 1  # the loop's thread only: no lock needed
        self.max_inflight = max(self.max_inflight, self._inflight)
        if self.on_request is not None:
            self.on_request(self._inflight)
        try:
            params = ChatParams(chat_template=self.chat_template,
                                chat_template_kwargs={"add_generation_prompt": True, "continue_final_message": False})
            tok_params = engine.renderer.default_chat_tok_params.with_kwargs(add_special_tokens=False)
            _, (prompt,) = await engine.renderer.render_chat_async([conversation], params, tok_params)
            final = None
            async for out in engine.generate(prompt, sampling, f"{self.name}-{next(self._ids)}"):
                final = out
            if final is None:
                raise RuntimeError("the engine returned no output")
            return to_result(final)
        except Exception as e:  # noqa: BLE001 - reported in the result, as the offline engine's isolation does
            return error_result(None, e)
        finally:
            self._inflight -= 1

    def close(self) -> None:
        """Shut the engine down and stop its loop (also done at exit by vLLM's own hooks)."""
        if getattr(self, "_loop", None) is None or not self._loop.is_running():
            return
        self.llm.shutdown()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self.llm = None  # shut down: its __del__ must not shut it down again at interpreter exit
