"""The xKG pool: pages scored through the document's topic, entity and structural concepts.

A query router gives the query class and entities; each axis scores the
concepts (cosine for topics and sections, loose-substring entity overlap for
bundles) and a page collects, per axis, the sum of concept score x membership
weight. Axes live on different scales (a section spreads its weight over a few
pages, a topic over many), so each axis is divided by its largest page score
before the class's alpha weights combine them:

    score(page) = sum over axes a of alpha(class, a) * S_a(page) / max S_a

Needs the annotation stage (``trident annotate``); its stored structure is only
the list of annotated documents it covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from trident_local.annotate import STAGE, has_annotation, load
from trident_local.annotate.concept_match import match_concepts
from trident_local.annotate.records import CONCEPT_KINDS
from trident_local.atomic import atomic_write_json, read_json
from trident_local.errors import TridentError
from trident_local.models.runtime import Models
from trident_local.query import Query, Route
from trident_local.retrieve.base import Hit, top_k
from trident_local.retrieve.router import route
from trident_local.retrieve.stored import StoredPool, complete_stages
from trident_local.store.index_store import IndexStore


class XKGPool(StoredPool[list[str]]):
    name: ClassVar[str] = "xkg"
    version: ClassVar[str] = "xkg-v1"
    needs_prepare: ClassVar[bool] = False  # the annotation stage writes everything it reads

    def __init__(self, store: IndexStore, models: Models | None = None):
        super().__init__(store, models)

    @property
    def embedder(self):
        return self.models.embedder

    @property
    def chat(self):
        """The runtime's chat model (the router's); None under the "none" profile: rule routes."""
        return self.models.chat

    def documents(self) -> list[str]:
        """The complete documents that are annotated."""
        return [d for d in self.store.doc_ids([*complete_stages(self.store), STAGE]) if has_annotation(self.store, d)]

    def config_parts(self) -> tuple[str, ...]:
        return (self.store.config.embedder,)

    def compute(self, doc_ids: list[str]) -> list[str]:
        return list(doc_ids)

    def save(self, doc_ids: list[str], folder: Path) -> dict[str, Any]:
        atomic_write_json(folder / "docs.json", doc_ids)
        return {"documents": len(doc_ids)}

    def read(self, folder: Path) -> list[str]:
        return list(read_json(folder / "docs.json"))

    def score_pages(self, query: Query | str, doc_ids: Sequence[str], r: Route) -> list[Hit]:
        qvec = Query.of(query).vector(self.embedder)
        axes: dict[str, list[np.ndarray]] = {k: [] for k in CONCEPT_KINDS}
        for d in doc_ids:
            m = match_concepts(load(self.store, d), qvec, r.entities)
            for k in CONCEPT_KINDS:
                axes[k].append(m.axis_page_scores(k))
        total = [np.zeros_like(v) for v in axes["T"]]
        for k in CONCEPT_KINDS:
            peak = max((float(v.max()) for v in axes[k] if v.size), default=0.0)
            if peak <= 0:
                continue
            for i, v in enumerate(axes[k]):
                total[i] += r.alpha[k] * v / peak
        hits = [
            Hit(d, p + 1, float(s), self.name)
            for d, scores in zip(doc_ids, total, strict=True)
            for p, s in enumerate(scores)
            if s > 0
        ]
        return hits

    def retrieve(self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        """Routes the query once (stored on ``query.route``), then scores the pages' concepts."""
        q = Query.of(query)
        targets = list(doc_ids) if doc_ids is not None else self.load()
        missing = [d for d in targets if not has_annotation(self.store, d)]
        if missing:
            name = (
                self.store.manifest.documents[missing[0]].file_name
                if missing[0] in self.store.manifest.documents
                else missing[0]
            )
            raise TridentError(
                f"the xkg pool needs annotated documents; {name} is not annotated: "
                f"run `trident annotate --index {self.store.root}`"
            )
        if q.route is None:
            q.route = route(q.text, self.chat)
        if not targets:
            return []
        return top_k(self.score_pages(q, targets, q.route), k)
