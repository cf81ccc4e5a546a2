"""LitTraceQA: answers over a paper collection with their trace (papers, typed evidence locators, answer).

:mod:`.papers` (paper records, paper retrieval and selection), :mod:`.evidence` (typed evidence objects
inside the chosen papers), :mod:`.formats` (answer formats shared with the scorer,
:mod:`trident_local.evaluate.trace_metrics`), :mod:`.extractive` (the no-model answerer), :mod:`.prompts`
and :mod:`.answer` (the chat-model answer), :mod:`.tracer` ties them together::

    from trident_local.trace import Tracer
    res = Tracer(Index.open("idx")).trace("Which toolkit ...?")
"""

from __future__ import annotations

__all__ = ["TraceResult", "Tracer"]


def __getattr__(name: str):  # lazy: the scorer imports .formats without the retrievers
    if name in __all__:
        from trident_local.trace import tracer

        return getattr(tracer, name)
    raise AttributeError(name)
