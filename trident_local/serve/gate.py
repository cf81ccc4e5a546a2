"""A bounded queue in front of the model runtime: ``slots`` run at once, ``queue`` wait, the rest get 429."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class QueueFull(Exception):
    def __init__(self, retry_after: int):
        super().__init__("the model queue is full; retry later")
        self.retry_after = retry_after


class Gate:
    def __init__(self, slots: int, queue: int, retry_after: int = 2):
        if slots < 1 or queue < 0:
            raise ValueError("model_slots must be >= 1 and model_queue >= 0")
        self.capacity = slots + queue
        self.retry_after = retry_after
        self.admitted = 0
        self._sem = asyncio.Semaphore(slots)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self.admitted >= self.capacity:
            raise QueueFull(self.retry_after)
        self.admitted += 1
        try:
            async with self._sem:
                yield
        finally:
            self.admitted -= 1
