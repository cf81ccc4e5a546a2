"""What annotation writes per document: page records, typed concepts, and which strategy made each part.

Everything is a plain dataclass that round-trips through JSON. Vectors (concept
embeddings, per-page field embeddings) live beside the JSON in .npy files; the
JSON names their row order so a reader never guesses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from trident_local.text import Entity

ANNOTATION_VERSION = 1
CONCEPT_KINDS = ("T", "E", "S")  # topic, entity bundle, structural section
FIELD_NAMES = ("visual", "section", "entities", "text")  # per-page field vectors, in this row order


@dataclass
class PageRecord:
    """The per-page record the reranker sees (besides concept hits and the retriever score)."""

    page: int  # 1-based
    section: str  # section path "A > B"
    visual: str  # caption of visible tables, charts, figures and layout (<= 60 words)
    entities: list[Entity] = field(default_factory=list)  # top-15 by salience
    snippet: str = ""  # first 600 characters of the page text

    def entity_tags(self) -> list[str]:
        return [e.tag for e in self.entities]


@dataclass
class Concept:
    """A T/E/S concept and its pages with membership weights in 0..1 (see each builder for the definition)."""

    concept_id: str  # "T3", "E12", "S4"
    kind: str  # one of CONCEPT_KINDS
    name: str
    weights: dict[int, float]  # page -> weight
    members: list[str] = field(default_factory=list)  # T: top terms, E: entities, S: the section path
    vec_row: int = -1  # row in the concept vector file (T and S), -1 for E

    @property
    def tag(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass
class DocAnnotation:
    """Everything annotation made for one document."""

    doc_id: str
    pages: list[PageRecord]
    concepts: list[Concept]
    strategies: dict[str, str]  # part -> "model:<profile>" or "no-model:<rule>"
    stats: dict[str, Any] = field(default_factory=dict)
    embedder: str = ""
    version: int = ANNOTATION_VERSION

    def page(self, number: int) -> PageRecord:
        return self.pages[number - 1]

    def concepts_of(self, kind: str) -> list[Concept]:
        return [c for c in self.concepts if c.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for c in d["concepts"]:  # JSON object keys are strings
            c["weights"] = {str(k): v for k, v in c["weights"].items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DocAnnotation:
        pages = [PageRecord(**{**p, "entities": [Entity(**e) for e in p["entities"]]}) for p in d["pages"]]
        concepts = [
            Concept(**{**c, "weights": {int(k): float(v) for k, v in c["weights"].items()}})
            for c in d["concepts"]
        ]
        return cls(**{**d, "pages": pages, "concepts": concepts})
