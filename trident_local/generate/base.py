"""The answer-strategy protocol and registry: a name -> "module:attr", imported on first use.

A strategy answers from the selected pages (best first) and cites them. One
that needs a chat model names the no-model strategy that stands in for it when
the run has none (``no_model``), so callers never branch on ``chat is None``.
Adding a strategy: one module with a class implementing :class:`AnswerStrategy`,
and one line in ``_REGISTRY`` below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from trident_local.lazy_registry import LazyRegistry

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


_REGISTRY = LazyRegistry("answer strategy", "answer strategies", {
    "plain": "trident_local.generate.model_answer:PlainAnswer",
    "lenses": "trident_local.generate.model_answer:LensesAnswer",
    "auto": "trident_local.generate.model_answer:AutoAnswer",
    "evidence": "trident_local.generate.evidence_answer:EvidenceFirstAnswer",
    "extractive": "trident_local.generate.extractive:ExtractiveAnswer",
})


def answer_names() -> list[str]:
    return _REGISTRY.names()


def register_answer(name: str, target: str) -> None:
    """Add a answer strategy as a lazy "module:attr" target."""
    _REGISTRY.register(name, target)


def get_answer_strategy(name: str, chat: ChatModel | None = None) -> AnswerStrategy:
    """The answer strategy ``name``, or its no-model stand-in when it needs a model and ``chat`` is None."""
    return _REGISTRY.build(name, chat)
