"""Match a question to a document's concepts: per-concept scores, per-axis page scores, concept-hit tags.

Topic and structural concepts score by cosine between the question vector and
the concept vector (clipped at 0); entity bundles by loose-substring overlap
with the question's entities. Only the ``top_n`` best concepts of each axis
count, so a page is not lifted by many weak matches. Shared by the xKG pool and
the rerank records, so both see the same concept evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trident_local.annotate.cache import LoadedAnnotation
from trident_local.annotate.entities import overlap_score
from trident_local.annotate.records import CONCEPT_KINDS

TOP_N = 8
MAX_HITS = 6


@dataclass
class ConceptMatch:
    """Scores of one document's concepts for one question (aligned with ``annotation.concepts``)."""

    loaded: LoadedAnnotation
    scores: np.ndarray  # (n_concepts,)

    def axis_page_scores(self, kind: str) -> np.ndarray:
        """sum over concepts of ``kind`` of score x membership weight, per page (index = page - 1)."""
        ann = self.loaded.annotation
        out = np.zeros(len(ann.pages), dtype=np.float32)
        for c, s in zip(ann.concepts, self.scores, strict=True):
            if c.kind != kind or s <= 0:
                continue
            for p, w in c.weights.items():
                if 1 <= p <= len(out):
                    out[p - 1] += s * w
        return out

    def hits(self, page: int, max_hits: int = MAX_HITS) -> list[tuple[str, float]]:
        """(tag, score x weight) of the page's concepts that the question matches, best first."""
        ann = self.loaded.annotation
        found = [
            (c.tag, float(s * c.weights[page]))
            for c, s in zip(ann.concepts, self.scores, strict=True)
            if s > 0 and page in c.weights
        ]
        found.sort(key=lambda x: -x[1])
        return found[:max_hits]


def match_concepts(
    loaded: LoadedAnnotation, qvec: np.ndarray, query_entities: list[str], top_n: int = TOP_N
) -> ConceptMatch:
    ann = loaded.annotation
    scores = np.zeros(len(ann.concepts), dtype=np.float32)
    q = np.asarray(qvec, dtype=np.float32).reshape(-1)
    for i, c in enumerate(ann.concepts):
        if c.kind == "E":
            scores[i] = overlap_score(query_entities, c.members)
        elif 0 <= c.vec_row < len(loaded.concept_vecs):
            scores[i] = max(0.0, float(loaded.concept_vecs[c.vec_row] @ q))
    for kind in CONCEPT_KINDS:  # keep the top_n of each axis
        idx = np.flatnonzero([c.kind == kind for c in ann.concepts])
        if len(idx) > top_n:
            drop = idx[np.argsort(-scores[idx], kind="stable")[top_n:]]
            scores[drop] = 0.0
    return ConceptMatch(loaded, scores)
