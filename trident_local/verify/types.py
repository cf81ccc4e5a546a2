"""What flows between the AtomCite stages: claims, judgements, per-claim results, the report.

Every class is a plain dataclass with ``to_dict`` / ``from_dict`` so that a
report round-trips through JSON. Pages are 1-based.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Verdicts a judge may return. "unknown" means the judge could not decide (its model
# call failed, its output could not be parsed, or the page has nothing to read in
# that channel); it is never produced by a model on purpose.
SUPPORTED, PARTIAL, UNSUPPORTED, UNKNOWN = "supported", "partial", "unsupported", "unknown"
JUDGE_VERDICTS: tuple[str, ...] = (SUPPORTED, PARTIAL, UNSUPPORTED)
# The merged verdict adds "inconsistent" (a hard conflict between the two channels).
INCONSISTENT = "inconsistent"
VERDICTS: tuple[str, ...] = (SUPPORTED, PARTIAL, UNSUPPORTED, INCONSISTENT, UNKNOWN)

# Repair actions (one per claim / cited page pair).
KEEP, FIX_PAGE, REMOVE, FLAG = "keep", "fix-page", "remove", "flag"
FIX_REGION = "fix-region"  # same page, another region of it: the one that states the claim's values
ACTIONS: tuple[str, ...] = (KEEP, FIX_REGION, FIX_PAGE, REMOVE, FLAG)

TEXT, IMAGE = "text", "image"


@dataclass
class Claim:
    """One claim of an answer and the pages it cites.

    ``sentence`` indexes the sentence (or JSON claim) the claim came from; atomic
    claims produced by decomposition share their sentence's index and pages.
    """

    text: str
    pages: list[int]
    claim_id: str = ""
    sentence: int = 0
    source: str = "marker"  # marker | json | decomposed | given
    regions: list[dict[str, Any]] = field(default_factory=list)  # boxes the answer cited ({page, bbox, ...})
    answer: str | None = None  # what the claim asserts, when the text also holds the question ("given")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Claim:
        return cls(**{**d, "pages": [int(p) for p in d.get("pages", [])], "regions": list(d.get("regions", []))})


@dataclass
class Judgement:
    """One channel's verdict on one (claim, page) pair.

    ``score`` is the no-model scorer's support score (None for model judges);
    ``support_score`` is that score computed beside a model judge's verdict (None where no
    scorer ran); ``error`` says what went wrong when the verdict is "unknown" or was repaired.
    """

    verdict: str
    rationale: str = ""
    channel: str = TEXT
    page: int = 0
    judge: str = ""
    score: float | None = None
    error: str | None = None
    support_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Judgement:
        return cls(**d)


@dataclass
class ClaimResult:
    """The verdict on one (claim, cited page) pair and what the repair policy did with it.

    ``verdict`` is the merged verdict on the cited page only. ``new_page`` is set for
    "fix-page". ``window`` lists the merged verdicts of the window pages that were
    judged to propose a correction (they never change ``verdict``). ``regions`` are the
    boxes that state the claim's values on the page the citation ends on, and
    ``region_check`` what the region check found ("stated", "computed: a - b", or why not).
    ``floor`` says why a model judge's "supported" did not stand (:mod:`trident_local.verify.floor`).
    """

    claim: Claim
    cited_page: int
    verdict: str
    action: str
    new_page: int | None = None
    flags: list[str] = field(default_factory=list)
    judgements: list[Judgement] = field(default_factory=list)
    window: dict[int, str] = field(default_factory=dict)
    regions: list[dict[str, Any]] = field(default_factory=list)
    region_check: str = ""
    floor: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["window"] = {str(k): v for k, v in self.window.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClaimResult:
        return cls(
            claim=Claim.from_dict(d["claim"]),
            cited_page=int(d["cited_page"]),
            verdict=d["verdict"],
            action=d["action"],
            new_page=d.get("new_page"),
            flags=list(d.get("flags", [])),
            judgements=[Judgement.from_dict(j) for j in d.get("judgements", [])],
            window={int(k): v for k, v in d.get("window", {}).items()},
            regions=list(d.get("regions", [])),
            region_check=d.get("region_check", ""),
            floor=d.get("floor", ""),
        )


@dataclass
class VerificationReport:
    """Everything `trident verify` prints: per-pair results and the corrected answer."""

    doc_id: str
    file_name: str
    answer_format: str  # text | json
    results: list[ClaimResult]
    corrected_answer: str | dict[str, Any]
    window: int
    judges: dict[str, str] = field(default_factory=dict)  # channel -> judge name
    uncited: list[str] = field(default_factory=list)  # sentences without a citation (not verified)
    warnings: list[str] = field(default_factory=list)
    model_calls: int = 0

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.action] = out.get(r.action, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "file_name": self.file_name,
            "answer_format": self.answer_format,
            "window": self.window,
            "judges": dict(self.judges),
            "counts": self.counts(),
            "model_calls": self.model_calls,
            "results": [r.to_dict() for r in self.results],
            "corrected_answer": self.corrected_answer,
            "uncited": list(self.uncited),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VerificationReport:
        return cls(
            doc_id=d["doc_id"],
            file_name=d.get("file_name", ""),
            answer_format=d.get("answer_format", "text"),
            results=[ClaimResult.from_dict(r) for r in d.get("results", [])],
            corrected_answer=d.get("corrected_answer", ""),
            window=int(d.get("window", 2)),
            judges=dict(d.get("judges", {})),
            uncited=list(d.get("uncited", [])),
            warnings=list(d.get("warnings", [])),
            model_calls=int(d.get("model_calls", 0)),
        )
