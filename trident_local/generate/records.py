"""The answer record: text, how it was made, and the pages it cites with their record fields."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trident_local.rerank.records import CandidateRecord

NOT_ANSWERABLE = "Not answerable"
ABSTAINED = "Not answerable from the retrieved pages"  # the no-model answer below its confidence threshold
EXTRACTIVE = "extractive (no model)"


@dataclass
class EvidencePassage:
    """A passage shown with an answer (also when it abstains): where it is and how well it matched."""

    doc_id: str
    page: int
    text: str
    score: float


@dataclass
class Citation:
    """A cited page (1-based) with the annotated record fields a reader checks it against."""

    doc_id: str
    file_name: str
    page: int
    section: str = ""
    visual: str = ""
    entities: list[str] = field(default_factory=list)
    text: str = ""
    concept_hits: list[str] = field(default_factory=list)
    # where on the page the evidence sits: {"page", "bbox" [x0, y0, x1, y1] in PDF points (top-left
    # origin), "kind" ("cell", "row-header", "column-header", "row", "line", "block"), "text"}
    regions: list[dict] = field(default_factory=list)

    @classmethod
    def from_record(cls, rec: CandidateRecord, file_name: str) -> Citation:
        """The reranker's record of the page, as the answer cites it."""
        return cls(rec.doc_id, file_name, rec.page, rec.section, rec.visual, list(rec.entities), rec.text,
                   list(rec.concept_hits))


@dataclass
class Answer:
    question: str
    text: str  # the answer; "Not answerable" when the pages do not hold it
    mode: str  # "plain:<profile>", "lenses:<profile>" or EXTRACTIVE
    citations: list[Citation] = field(default_factory=list)
    gate: str = ""  # why this mode (the format gate's decision)
    lenses: dict[str, str] = field(default_factory=dict)  # lens -> its answer (lenses mode)
    synthesis: str = ""  # how the final answer was chosen (lenses mode)
    support: str = ""  # extractive: the supporting sentence or table row
    support_page: int | None = None  # extractive: the page it came from
    errors: list[str] = field(default_factory=list)  # model calls that failed or were unusable
    seconds: float = 0.0
    confidence: float | None = None  # no-model strategies: the calibrated confidence behind the answer
    evidence: list[EvidencePassage] = field(default_factory=list)  # best passages, shown even when abstaining
    computation: str = ""  # a computed answer written out ("95.2 - 74.5 = 20.7")
    located: str = ""  # a bare value with its unit and place ("95.2 million dollars: Coastal, 2023, Table 1, p. 2")
    candidate: str = ""  # no-model strategies: the answer before the abstention threshold
    features: dict[str, float] = field(default_factory=dict)  # no-model strategies: the confidence's inputs
    verification: dict[str, Any] | None = None  # the self-check of the answer's citations (None: skipped)
    prompt: dict[str, Any] = field(default_factory=dict)  # model: the pages' prompt tokens and what was cut to fit

    @property
    def answerable(self) -> bool:
        return not is_not_answerable(self.text)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_not_answerable(text: str) -> bool:
    t = " ".join(text.lower().split()).strip(" .!\"'")
    return t in ("not answerable", "unanswerable", "cannot be answered", "not answerable from the pages",
                 "not answerable from the retrieved pages", "")
