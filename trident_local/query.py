"""The question, built once per ask and handed to the pool, the reranker and the answer strategy.

    q = Query("What was the revenue in 2020?")
    index.search(q, pool="xkg")      # the xkg pool stores its route on q
    q.vector(embedder)                # embedded once per embedder, whoever asks first

Before this object every stage re-read the raw string: the question was
embedded by the dense pool, the xkg pool, the reranker and the extractive
answer, and its entities were found twice by different methods, so the
reranker's concept hits need not be those the pool ranked on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from trident_local.errors import TridentError

FREE_FORM = "free_form"

# -- the route: how a routing pool (xkg, :mod:`trident_local.retrieve.router`) classed the question --
QUERY_CLASSES = ("topical", "entity-level", "structural", "mixed")
RULE_ROUTE = "no-model:cue-rules"  # the route of the cue-word rules (the no-model strategy)

# alpha(class) per axis (T topic, E entity, S structure).
ALPHA: dict[str, dict[str, float]] = {
    "topical": {"T": 1.0, "E": 0.2, "S": 0.4},
    "entity-level": {"T": 0.4, "E": 1.0, "S": 0.2},
    "structural": {"T": 0.4, "E": 0.2, "S": 1.0},
    "mixed": {"T": 0.7, "E": 0.7, "S": 0.7},
}


@dataclass
class Route:
    query_class: str
    entities: list[str] = field(default_factory=list)
    source: str = RULE_ROUTE  # "model:<name>" or the rule name
    error: str | None = None  # why the model route fell back to rules

    @property
    def alpha(self) -> dict[str, float]:
        return ALPHA[self.query_class]


@dataclass(eq=False)
class Query:
    """One question. ``route`` is set by a routing pool (xkg); ``entities`` follow it when set."""

    text: str
    answer_format: str = FREE_FORM  # free_form | multiple_choice | table (LitTraceQA formats)
    route: Route | None = None
    # the no-model answer's abstention threshold (P(correct)); None: its calibrated threshold
    min_confidence: float | None = None
    _vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _multivectors: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TridentError(f"a question must be text, not {type(self.text).__name__}")
        if self.min_confidence is not None and not 0.0 <= self.min_confidence <= 1.0:
            raise TridentError(f"min_confidence is a probability in [0, 1], not {self.min_confidence}")

    @classmethod
    def of(cls, question: str | Query) -> Query:
        """``question`` itself when it is a Query, else a new Query of the text."""
        return question if isinstance(question, Query) else cls(question)

    # -- read from the text alone ------------------------------------------------------------------
    @cached_property
    def question_type(self) -> str:
        """ "multiple-choice", "short-extractive" or "open" (what the format gate reads)."""
        from trident_local.text import question_kind

        return question_kind(self.text)

    @cached_property
    def answer_type(self) -> str:
        """ "location", "numeric" or "other" (which lens the synthesis rule trusts)."""
        from trident_local.text import answer_type

        return answer_type(self.text)

    @cached_property
    def rule_entities(self) -> list[str]:
        """Pattern entities and quoted phrases of the question (the no-model route's entities)."""
        from trident_local.text import query_entities

        return query_entities(self.text)

    @property
    def entities(self) -> list[str]:
        """The route's entities when a pool routed the question, else the rule entities: one source
        for the pool's and the reranker's concept matches."""
        return self.route.entities if self.route is not None else self.rule_entities

    # -- embeddings, once per model ----------------------------------------------------------------
    def vector(self, embedder: Any) -> np.ndarray:
        """The question's query embedding under ``embedder`` (a TextEmbedder), computed once."""
        key = _model_key(embedder)
        if key not in self._vectors:
            self._vectors[key] = np.asarray(embedder.encode([self.text], kind="query")[0])
        return self._vectors[key]

    def set_vector(self, embedder: Any, vec: np.ndarray) -> None:
        """Use a vector computed elsewhere (e.g. a batch of questions embedded at once)."""
        self._vectors[_model_key(embedder)] = np.asarray(vec)

    def multivector(self, embedder: Any) -> Any:
        """The question's per-token embedding under a MultiVectorEmbedder, computed once."""
        key = _model_key(embedder)
        if key not in self._multivectors:
            self._multivectors[key] = embedder.embed_queries([self.text])
        return self._multivectors[key]


def _model_key(model: Any) -> str:
    """Models are keyed by name and identity: two instances of one profile may differ (tests)."""
    return f"{getattr(model, 'name', type(model).__name__)}@{id(model)}"
