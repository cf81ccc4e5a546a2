"""The evidence-first no-model answer: a typed span, the passage it comes from, a confidence, or abstention.

Passages are the sentences of the selected pages and the rows of their tables
(borderless tables rebuilt from word blocks, see :mod:`.tables`). Each passage
scores by the IDF-weighted share of the question's terms it holds, its embedding
cosine with the question, and a small bonus for higher-ranked pages. The answer
is, in this order of preference:

1. a computed value when the question asks for a difference, sum or ratio of two
   table cells it names (:mod:`.compute`; the computation is the support);
2. the table cell under the row and column the question names (:mod:`.tables`),
   when its row scores close to the best passage;
3. a span of the type the question expects (:mod:`.spans`) nearest to the
   question's words in one of the best passages;
4. the best passage itself, for open questions.

The confidence is ``W_LEX * share of question terms in the support + W_COS * cosine
+ W_TYPED * (a typed span or cell was found)``; below :data:`THRESHOLD` (calibrated
on a document split of MMLongBench-Doc, see docs/TRIDENT.md) the answer is
:data:`ABSTAIN` and the best passages are still returned as evidence. Nothing is
generated: every answer word is on a cited page, or is a computation over them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from trident_local.docs.model import Page
from trident_local.generate.compute import Computation, compute
from trident_local.generate.records import ABSTAINED, Answer, Citation, EvidencePassage
from trident_local.generate.spans import assigned_value, expected_kind, find_spans, nearest_span, scale_words
from trident_local.generate.tables import CellMatch, Table, best_cell, page_tables
from trident_local.models.protocols import TextEmbedder
from trident_local.retrieve.base import Hit
from trident_local.store.index_store import IndexStore
from trident_local.text import idf_table, terms, weighted_overlap

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.query import Query
    from trident_local.rerank.records import CandidateRecord

STRATEGY = "evidence-first (no model)"
ABSTAIN = ABSTAINED
W_LEX, W_COS, W_TYPED, W_RANK = 0.55, 0.30, 0.15, 0.05
# Abstain below: the accuracy-maximising threshold (lowest of the ties) on the first 100 questions of the calib
# document split (benchmarks/data/mmlb_doc_split.json, benchmarks/calibrate_abstention.py); docs/TRIDENT.md.
THRESHOLD = 0.54
CELL_MARGIN = 0.8  # a table cell wins when its row scores at least this share of the best passage
MAX_WORDS = 60
MAX_EMBEDDED = 32  # only the lexically best passages are embedded: embedding dominates the cost on CPU
N_EVIDENCE = 3
NUMERIC = ("count", "number", "money", "percent")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"(\[])|\n{2,}")
_REFERENCE = re.compile(r"^\s*\[\d+\]\s")
_SYMBOL = re.compile(r"(?<![\w'])([b-zB-HJ-Z])(?![\w'])")  # a one-letter symbol named by the question ("k")


@dataclass
class Passage:
    """A sentence or table row of a selected page and its match with the question."""

    page: int
    text: str
    kind: str  # "sentence" | "table-row"
    rank: int  # rank of its page among the selected pages (0 = best)
    score: float = 0.0
    lex: float = 0.0
    cos: float = 0.0
    cell: CellMatch | None = None


@dataclass
class EvidenceAnswer:
    """The answer text, what kind of answer it is, its support and page, a confidence and the evidence."""

    answer: str
    kind: str  # computed | table-cell | <span kind> | passage | abstain
    confidence: float
    support: str = ""
    page: int | None = None  # the page the support is on
    computation: str = ""
    evidence: list[Passage] = field(default_factory=list)
    candidate: str = ""  # the answer before the threshold (kept so that the threshold can be calibrated)

    @property
    def abstained(self) -> bool:
        return self.kind == "abstain"


def _paragraphs(blocks: list[str]) -> list[str]:
    """Blocks with sentence continuations joined: a display equation splits its sentence into blocks, and
    the block after it ("where k = 60 ...") starts in lower case; it belongs with the lines before it."""
    out: list[str] = []
    for b in blocks:
        t = b.strip()
        if out and t[:1].islower():
            out[-1] = f"{out[-1]} {t}"
        elif t:
            out.append(t)
    return out


def passages(pages: Sequence[Page]) -> tuple[list[Passage], list[Table]]:
    """Sentences and table rows of the pages (given best first), and the pages' tables."""
    out: list[Passage] = []
    tables: list[Table] = []
    for rank, p in enumerate(pages):
        for block in _paragraphs([b.text for b in p.blocks] or [p.text]):
            # a reference-list entry ("[2] G. Cormack, ...") stays whole: its parts mean nothing alone
            parts = [block] if _REFERENCE.match(block) else _SENT.split(block)
            for part in parts:
                s = " ".join(part.split())
                if len(s) >= 3:
                    out.append(Passage(p.number, " ".join(s.split()[:MAX_WORDS]), "sentence", rank))
        for t in page_tables(p):
            tables.append(t)
            for i in range(len(t.rows)):
                out.append(Passage(p.number, t.row_text(i), "table-row", rank))
    return out, tables


def score_passages(question: str, units: list[Passage], embedder: TextEmbedder,
                   qvec: np.ndarray | None = None) -> list[Passage]:
    """Score every passage; returns the lexically best MAX_EMBEDDED, best fused score first."""
    q_terms = terms(question)
    if not units or not q_terms:
        return []
    unit_terms = [terms(u.text) for u in units]
    idf = idf_table(unit_terms)
    default = float(np.log(1.0 + len(units)))
    for u, t in zip(units, unit_terms, strict=True):
        u.lex = weighted_overlap(q_terms, t, idf, default)
    keep = sorted(units, key=lambda u: -(u.lex + W_RANK / (1 + u.rank)))[:MAX_EMBEDDED]
    vecs = embedder.encode([u.text for u in keep], kind="passage")
    q = qvec if qvec is not None else embedder.encode([question], kind="query")[0]
    for u, c in zip(keep, vecs @ np.asarray(q, dtype=np.float32).reshape(-1), strict=True):
        u.cos = float(max(c, 0.0))
        u.score = W_LEX * u.lex + W_COS * u.cos + W_RANK / (1 + u.rank)
    return sorted(keep, key=lambda u: -u.score)


def _confidence(p: Passage, typed: bool) -> float:
    return round(W_LEX * p.lex + W_COS * p.cos + (W_TYPED if typed else 0.0), 4)


def _choose(question: str, ranked: list[Passage], tables: list[Table]) -> EvidenceAnswer:
    kind = expected_kind(question)
    comp: Computation | None = compute(tables, question)
    if comp is not None:
        row = next((p for p in ranked if p.kind == "table-row" and p.page == comp.page), ranked[0])
        return EvidenceAnswer(comp.text, "computed", _confidence(row, True), f"{comp.source}: {comp.shown}",
                              comp.page, comp.shown)
    q_numbers = re.findall(r"\d[\d,]*(?:\.\d+)?%?", question) if kind != "year" else []
    if kind in NUMERIC:
        # a passage without a value of the expected kind cannot hold the answer: it does not compete
        valued = [p for p in ranked if any(s.text not in q_numbers for s in find_spans(p.text, kind))] or ranked
    else:
        valued = ranked
    best = valued[0]
    if kind in NUMERIC:
        cell = best_cell(tables, question)
        if cell is not None:
            row = next((p for p in ranked if p.text == cell.support), None)
            if row is not None and row.score >= CELL_MARGIN * best.score:
                scale = scale_words(cell.table.title)
                support = cell.support + (f" (values in {scale})" if scale and scale not in cell.support else "")
                return EvidenceAnswer(cell.value, "table-cell", _confidence(row, True), support, row.page)
    if kind != "text":
        symbols = _SYMBOL.findall(question) if kind == "number" else []
        for p in ranked:  # an assignment ("k = 60") is specific enough to take from any scored passage
            for sym in symbols:
                if (v := assigned_value(p.text, sym)) is not None:
                    return EvidenceAnswer(v.text, "number", _confidence(p, True), p.text, p.page)
        q_words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", question)}
        anchors = [t for t in terms(question) if not t[0].isdigit()]
        for p in valued[:3]:
            span = nearest_span(p.text, anchors, kind, exclude=q_numbers)
            if span is not None and kind == "name" and {w.lower() for w in span.text.split()} & q_words:
                continue  # a name the question itself gives is not its answer
            if span is not None:  # the value alone (benchmarks score "412", not "412 megawatts"); the support
                return EvidenceAnswer(span.text, kind, _confidence(p, True), p.text, p.page)  # shows its unit
    top = ranked[0]
    return EvidenceAnswer(top.text, "passage", _confidence(top, False), top.text, top.page)


def evidence_answer(question: str, pages: Sequence[Page], embedder: TextEmbedder, *,
                    threshold: float = THRESHOLD, qvec: np.ndarray | None = None) -> EvidenceAnswer:
    """The evidence-first answer over ``pages`` (best first); abstains below ``threshold`` with its evidence."""
    if not question.strip():
        raise ValueError("the question is empty")
    units, tables = passages(pages)
    ranked = score_passages(question, units, embedder, qvec)
    if not ranked:
        return EvidenceAnswer(ABSTAIN, "abstain", 0.0)
    evidence = ranked[:N_EVIDENCE]
    chosen = _choose(question, ranked, tables)
    chosen.evidence, chosen.candidate = evidence, chosen.answer
    if chosen.confidence < threshold:
        return EvidenceAnswer(ABSTAIN, "abstain", chosen.confidence, chosen.support, chosen.page,
                              chosen.computation, evidence, chosen.answer)
    return chosen


def answer_from_hits(store: IndexStore, question: str, hits: Sequence[Hit], cites: list[Citation],
                     embedder: TextEmbedder, *, threshold: float = THRESHOLD,
                     qvec: np.ndarray | None = None) -> Answer:
    """The evidence-first strategy as an :class:`Answer` over ranked hits; the support's page is cited first."""
    t0 = time.perf_counter()
    pages = [store.document(h.doc_id).page(h.page) for h in hits]
    ea = evidence_answer(question, pages, embedder, threshold=threshold, qvec=qvec)
    if ea.page is not None:
        cites.sort(key=lambda c: c.page != ea.page)
    return Answer(
        question,
        ea.answer,
        STRATEGY,
        cites,
        gate=f"no chat model: {ea.kind} (confidence {ea.confidence:.2f}, threshold {threshold:.2f})",
        support=ea.support,
        support_page=ea.page,
        seconds=time.perf_counter() - t0,
        confidence=ea.confidence,
        evidence=[EvidencePassage(hits[p.rank].doc_id, p.page, p.text, round(p.score, 4)) for p in ea.evidence],
        computation=ea.computation,
        candidate=ea.candidate,
    )


class EvidenceFirstAnswer:
    """The no-model answer strategy (the default without a chat model): see the module docstring."""

    name: ClassVar[str] = "evidence"
    needs_model: ClassVar[bool] = False
    no_model: ClassVar[str | None] = None

    def answer(self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None,
               records: Sequence[CandidateRecord] = ()) -> Answer:
        from trident_local.generate.answer import citations

        embedder = index.models.embedder
        return answer_from_hits(index.store, query.text, hits, citations(index.store, hits, records),
                                embedder, qvec=query.vector(embedder))
