"""The tracer: papers, typed evidence locators and the answer for one question at a time.

    tracer = Tracer(Index.open("idx"))                  # chat=None: the extractive CPU default
    res = tracer.trace("Which dataset ...?", answer_format="free_form")
    res.to_dict()  # {"papers": [...], "evidence": [{"paper", "page", "type", "object"}], "answer": ..., ...}

Stages: paper retrieval and selection (:mod:`.papers`), evidence retrieval inside the selected papers
(:mod:`.evidence`), then the answer from the selected evidence only: with a chat model one call
(:mod:`.answer`), falling back to the extractive answer (:mod:`.extractive`) with the reason recorded
when the reply stays unusable; without one, extractively.

The oracle rungs of the evaluation ladder pass ``papers`` (retrieval skipped) or
``evidence`` (gold locators, read back from the index, with their quotes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from trident_local.docs.paper_meta import normalize_label, normalize_type
from trident_local.errors import ModelOutputError, TridentError
from trident_local.query import Query
from trident_local.trace.answer import model_answer
from trident_local.trace.evidence import Evidence, ObjectRetriever
from trident_local.trace.extractive import Extractive, overlap, terms
from trident_local.trace.formats import FORMATS
from trident_local.trace.papers import PaperIndex

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel

@dataclass
class TraceResult:
    """A trace answer. ``evidence`` items are locators {paper, page, type, object, object_id}."""

    question: str
    answer_format: str
    papers: list[str]
    evidence: list[dict[str, Any]]
    answer: Any
    mode: str  # extractive | generated
    model: str = "none"
    choices: list[str] = field(default_factory=list)
    paper_candidates: list[dict[str, Any]] = field(default_factory=list)
    support: str = ""  # the evidence text the answer was read from (extractive) or "" (generated)
    notes: list[str] = field(default_factory=list)  # repairs, fallbacks

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def prediction(self, rid: str) -> dict[str, Any]:
        """The record `trident eval trace score` reads."""
        return {"id": rid, "papers": self.papers, "evidence": self.evidence, "answer": self.answer,
                "mode": self.mode, "notes": self.notes}



class Tracer:
    """Paper selection, evidence selection and the answer for one question at a time."""

    def __init__(self, index: Index, chat: ChatModel | None = None, *, embedder: Any = None,
                 per_paper: int = 1, max_papers: int = 3, max_evidence: int = 5):
        self.index = index
        self.papers = PaperIndex(index, embedder)
        self.objects = ObjectRetriever(index, self.papers.embedder)
        self.chat = chat
        self.extractive = Extractive(self.papers.embedder)
        self.per_paper, self.max_papers, self.max_evidence = per_paper, max_papers, max_evidence

    @classmethod
    def from_profile(cls, index: Index, profile: str | None = None, **kw: Any) -> Tracer:
        """With the chat model of ``profile`` (default: the index runtime's ``chat``; "none" = extractive)."""
        return cls(index, index.models.get("chat", profile or None), **kw)

    def oracle_evidence(self, items: Sequence[Mapping[str, Any]]) -> list[Evidence]:
        """Gold locators as Evidence: the matching index object's text, plus the gold quote."""
        out = []
        for it in items:
            doc_id = self.papers.resolve(str(it["paper"]))
            page, typ = int(it["page"]), normalize_type(str(it.get("type", "")))
            want = normalize_label(it.get("object"), typ)
            quote = str(it.get("quote") or "")
            cands = [c.obj for c in self.objects.candidates(doc_id) if c.obj.page == page and c.obj.type == typ]
            if want:
                cands = [o for o in cands if normalize_label(o.label, o.type) == want] or cands
            q = terms(quote)
            obj = max(cands, key=lambda o: overlap(q, f"{o.caption} {o.text}")) if cands and (want or q) else None
            label = str(it.get("object") or "") or (obj.label if obj else "")
            text = obj.text if obj else ""
            if quote and (not text or typ != "table" and quote not in text):
                text = f"{text}\n{quote}".strip()  # a table keeps its rows: the quote would read as one more
            out.append(Evidence(self.papers.paper_id(doc_id), doc_id, page, typ, obj.object_id if obj else "",
                                label, obj.caption if obj else "", text, 1.0, "oracle"))
        return out

    def trace(self, question: str, answer_format: str = "free_form", choices: Sequence[str] | None = None, *,
              papers: Sequence[str] | None = None, evidence: Sequence[Mapping[str, Any]] | None = None,
              n_papers: int | None = None) -> TraceResult:
        """Answer ``question`` with its trace. ``papers``: use these (oracle papers); ``evidence``: use these
        gold locators (oracle evidence; implies their papers)."""
        fmt = answer_format
        if fmt not in FORMATS:
            raise TridentError(f"answer format {fmt!r} is not one of {', '.join(FORMATS)}")
        choices = list(choices or [])
        if fmt == "multiple_choice" and len(choices) < 2:
            raise TridentError("a multiple_choice question needs at least two choices")
        notes: list[str] = []
        cand_info: list[dict[str, Any]] = []
        query = Query(question, answer_format=fmt)  # embedded once for papers, objects and the answer
        if evidence is not None:
            chosen_ev = self.oracle_evidence(evidence)
            doc_ids = list(dict.fromkeys(e.doc_id for e in chosen_ev))
            if papers:
                doc_ids = list(dict.fromkeys([self.papers.resolve(p) for p in papers] + doc_ids))
            locators = [{"paper": e.paper, "page": e.page, "type": e.type, "object": e.label or None,
                         "object_id": e.object_id} for e in chosen_ev]
        else:
            if papers is not None:
                doc_ids = list(dict.fromkeys(self.papers.resolve(p) for p in papers))
            else:
                hits = self.papers.search(query)
                sel = self.papers.select(question, hits, n=n_papers, max_papers=self.max_papers)
                doc_ids = [h.doc_id for h in sel]
                cand_info = [{"paper": h.paper_id, "title": h.title, "score": round(h.score, 5), "named": h.named,
                              "selected": h.doc_id in doc_ids} for h in hits[:5]]
            ranked = self.objects.search(query, doc_ids, answer_format=fmt)
            chosen_ev = self.objects.select(question, ranked, doc_ids, per_paper=self.per_paper,
                                            max_items=self.max_evidence)
            locators = [e.locator() for e in chosen_ev]
        paper_ids = [self.papers.paper_id(d) for d in doc_ids]
        mode, model_name, support = "extractive", "none", ""
        answer: Any = None
        if self.chat is not None:
            model_name = getattr(self.chat, "name", type(self.chat).__name__)
            try:
                answer, repairs = model_answer(self.chat, question, fmt, choices, chosen_ev)
                notes += repairs
                mode = "generated"
            except ModelOutputError as e:
                notes.append(f"model answer unusable ({e}); extractive answer used instead")
        if mode == "extractive":
            answer, support = self.extractive.answer(query, fmt, choices, chosen_ev)
        return TraceResult(question, fmt, paper_ids, locators, answer, mode, model_name, choices, cand_info,
                           support, notes)
