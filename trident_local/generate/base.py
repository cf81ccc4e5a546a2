"""The answer-strategy protocol and registry: a name -> "module:attr", imported on first use.

A strategy answers from the selected pages (best first) and cites them. One
that needs a chat model names the no-model strategy that stands in for it when
the run has none (``no_model``), so callers never branch on ``chat is None``.
Adding a strategy: one module with a class implementing :class:`AnswerStrategy`,
and one line in ``_STRATEGIES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from trident_local.errors import TridentError

if TYPE_CHECKING:
    from trident_local.generate.records import Answer
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.query import Query
    from trident_local.rerank.records import CandidateRecord
    from trident_local.retrieve.base import Hit


class AnswerStrategy(Protocol):
    """``records`` are the reranker's page records (when it built them): the citations' fields."""

    name: ClassVar[str]
    needs_model: ClassVar[bool]
    no_model: ClassVar[str | None]  # the strategy used instead when there is no chat model

    def answer(
        self,
        index: Index,
        query: Query,
        hits: Sequence[Hit],
        *,
        chat: ChatModel | None,
        records: Sequence[CandidateRecord] = (),
    ) -> Answer: ...


_STRATEGIES: dict[str, str] = {
    "plain": "trident_local.generate.model_answer:PlainAnswer",
    "lenses": "trident_local.generate.model_answer:LensesAnswer",
    "auto": "trident_local.generate.model_answer:AutoAnswer",
    "extractive": "trident_local.generate.extractive:ExtractiveAnswer",
}


def answer_names() -> list[str]:
    return list(_STRATEGIES)


def register_answer(name: str, target: str) -> None:
    """Add an answer strategy as a lazy "module:attr" target."""
    _STRATEGIES[name] = target


def get_answer_strategy(name: str, chat: ChatModel | None = None) -> AnswerStrategy:
    """The strategy ``name``, or its no-model stand-in when it needs a model and ``chat`` is None."""
    if name not in _STRATEGIES:
        raise TridentError(f"unknown answer strategy {name!r}; answer strategies: {', '.join(_STRATEGIES)}")
    module, attr = _STRATEGIES[name].split(":")
    cls = getattr(importlib.import_module(module), attr)
    if cls.needs_model and chat is None:
        if cls.no_model is None:
            raise TridentError(f"the {name!r} answer strategy needs a chat model and has no no-model strategy")
        return get_answer_strategy(cls.no_model, chat)
    return cls()
