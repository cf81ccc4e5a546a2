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
3. a span of the type the question expects (:mod:`.spans`): for "how many X", a
   number that X follows ("815 membership warehouses"), else the span nearest to the
   question's words in one of the best passages (a cited marker, "[2]", answers with the
   reference-list entry it points to when the pages hold it);
4. the best passage itself, for open questions.

The question is matched without its answer-form instructions ("Please write the
answer in int format"). The confidence is P(correct) from a logistic model over the
answer's features (:mod:`.answer_confidence`: the share of the question's terms in the
support and on the pages at all, cosine, typed value, table cell, a question word beside
the value), fitted with non-negative weights on a document split of MMLongBench-Doc; below
its threshold (:data:`CONFIDENCE`, see docs/TRIDENT.md) the answer is :data:`ABSTAIN` and the
best passages are still returned as evidence. Nothing is generated: every answer word is on a
cited page, or is a computation over them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from trident_local.docs.model import Page
from trident_local.generate.answer_confidence import AnswerConfidence
from trident_local.generate.compute import Computation, compute
from trident_local.generate.formula import FormulaAnswer, computes, definitions, evaluate, index_lookup
from trident_local.generate.line_item import evaluate_item, item_question, own_names
from trident_local.generate.records import ABSTAINED, Answer, Citation, EvidencePassage
from trident_local.generate.spans import (
    assigned_value,
    count_of,
    counted_noun,
    expected_kind,
    find_spans,
    nearest_span,
    scale_words,
)
from trident_local.generate.statements import named_statements, statement_kinds
from trident_local.generate.tables import CellMatch, Table, best_cell, page_tables
from trident_local.models.protocols import TextEmbedder
from trident_local.regions.locate import numbers
from trident_local.retrieve.base import Hit
from trident_local.store.index_store import IndexStore
from trident_local.text import clean_question, idf_table, terms, weighted_overlap

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.query import Query
    from trident_local.rerank.records import CandidateRecord

STRATEGY = "evidence-first (no model)"
ABSTAIN = ABSTAINED
W_LEX, W_COS, W_RANK = 0.55, 0.30, 0.05  # passage ranking (not the confidence)
ADJACENT_CHARS = 40  # "a question word next to the value": within this many characters of it
# P(correct) and the abstention threshold: fitted on the calib half of the document split
# (benchmarks/data/mmlb_doc_split.json) by benchmarks/calibrate_abstention.py --fit; docs/TRIDENT.md.
CONFIDENCE = AnswerConfidence(
    weights={"lex": 1.6522, "cos": 0.0, "coverage": 0.5978, "typed": 1.2702, "table": 0.0, "adjacent": 0.0},
    bias=-5.1438,
    threshold=0.0757,
    calibration={"split": "calib half of benchmarks/data/mmlb_doc_split.json (370 questions, 13 right candidates)",
                 "rerank": "annotated (no model), rrf pool", "C": 1.0, "weights": ">= 0",
                 "threshold": "best calib accuracy (0.224; all 'Not answerable' 0.208)"},
)
# A metric computed from line items, or one line item read from its row, is right far more often than a
# passage answer with the same features (FinanceBench dev 27 of 28, MMLongBench-Doc 29 of 34): its own
# model, over how well the operands' row labels name their items (``lex``, the mean label match), fitted
# on both development sets' table answers (`benchmarks/defined_metrics.py --fit`).
TABLE_CONFIDENCE = AnswerConfidence(
    weights={"lex": 0.37, "cos": 0.0, "coverage": 0.0, "typed": 0.0, "table": 0.0, "adjacent": 0.0},
    bias=1.868,
    threshold=CONFIDENCE.threshold,  # abstains no more often than before: the passage answers' threshold
    calibration={"rows": "the 62 table answers of FinanceBench dev (28, 27 right) and MMLongBench-Doc (34, 29 right)",
                 "C": 1.0, "weights": ">= 0",
                 "check": "mean confidence 0.90 / 0.90 against 0.96 / 0.85 right (FinanceBench dev / "
                          "MMLongBench-Doc); fitted on the other set alone: 0.85 / 0.96"},
)
CELL_MARGIN = 0.8  # a table cell wins when its row scores at least this share of the best passage
MAX_WORDS = 60
MAX_EMBEDDED = 32  # only the lexically best passages are embedded: embedding dominates the cost on CPU
N_EVIDENCE = 3
N_COUNTED = 8  # best passages searched for a number followed by the noun a "how many" question counts
NUMERIC = ("count", "number", "money", "percent")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"(\[])|\n{2,}")
_REFERENCE = re.compile(r"^\s*\[\d+\]\s")
_MARKER = re.compile(r"\[\d+\]")  # an in-text citation marker, the whole span
_FORMAT_HINT = re.compile(r"\b(int|integer|float|decimal)\b(?: format)?", re.I)
_NOTE = re.compile(r"\([^()]*\)")  # a parenthesised note after a value: "73.2% (1.9%)"
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
    features: dict[str, float] = field(default_factory=dict)  # what the confidence is computed from

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
                   qvec: np.ndarray | None = None) -> tuple[list[Passage], float]:
    """Score every passage: the lexically best MAX_EMBEDDED, best fused score first, and the coverage of the
    question (the IDF-weighted share of its terms found anywhere on the pages: a question about something the
    pages never name, such as another year or company, is one they cannot answer)."""
    q_terms = terms(question)
    if not units or not q_terms:
        return [], 0.0
    unit_terms = [terms(u.text) for u in units]
    idf = idf_table(unit_terms)
    default = float(np.log(1.0 + len(units)))
    for u, t in zip(units, unit_terms, strict=True):
        u.lex = weighted_overlap(q_terms, t, idf, default)
    coverage = weighted_overlap(q_terms, {x for t in unit_terms for x in t}, idf, default)
    keep = sorted(units, key=lambda u: -(u.lex + W_RANK / (1 + u.rank)))[:MAX_EMBEDDED]
    vecs = embedder.encode([u.text for u in keep], kind="passage")
    q = qvec if qvec is not None else embedder.encode([question], kind="query")[0]
    for u, c in zip(keep, vecs @ np.asarray(q, dtype=np.float32).reshape(-1), strict=True):
        u.cos = float(max(c, 0.0))
        u.score = W_LEX * u.lex + W_COS * u.cos + W_RANK / (1 + u.rank)
    return sorted(keep, key=lambda u: -u.score), coverage


def _adjacent(text: str, start: int, length: int, anchors: set[str]) -> float:
    """1.0 when a question term is within a few words of the span ("815 membership warehouses"), else 0.0."""
    window = terms(text[max(0, start - ADJACENT_CHARS): start + length + ADJACENT_CHARS])
    return 1.0 if anchors & set(window) else 0.0


def _features(p: Passage, kind: str, adjacent: float) -> dict[str, float]:
    """The inputs of the confidence for an answer taken from passage ``p`` (coverage is added by the caller)."""
    return {"lex": round(p.lex, 4), "cos": round(p.cos, 4), "typed": float(kind != "passage"),
            "table": float(kind in ("computed", "table-cell")), "adjacent": adjacent}


def _one_value(cell: str) -> bool:
    """A cell states one value: "73.2% (1.9%)" (a value and its note) and "(1,174)" do; a column's numbers
    run together ("14 11 5 6 2") or a label without a number do not answer a question asking for a number."""
    return len(numbers(_NOTE.sub(" ", cell)) or numbers(cell)) == 1


def _kind(question: str) -> str:
    """The expected kind; a question that names only its answer's format ("in int format") expects a number."""
    kind = expected_kind(question)
    if kind == "text" and (m := _FORMAT_HINT.search(question)):
        return "count" if m.group(1).lower() in ("int", "integer") else "number"
    return kind


def reference_entry(units: Sequence[Passage], marker: str, doc: str = "",
                    docs: Sequence[str] | None = None) -> Passage | None:
    """The reference-list entry ``marker`` ("[2]") points to: the first passage of document ``doc``
    that starts ``[2] G. Cormack, ...``. ``docs``: the document of each page rank (None: the pages
    are of one document)."""
    for u in units:
        if _REFERENCE.match(u.text) and u.text.split()[0] == marker and (docs[u.rank] if docs else "") == doc:
            return u
    return None


def _choose(question: str, core: str, ranked: list[Passage], tables: list[Table],
            units: Sequence[Passage] = (), docs: Sequence[str] | None = None) -> EvidenceAnswer:
    """The answer before the threshold; ``core`` is the question without its answer-form instructions.
    ``units``: all passages of the pages, where an in-text marker found as the answer to "which
    reference is cited ..." finds the reference-list entry it resolves to."""
    kind = _kind(question)
    anchors = {t for t in terms(core) if not t[0].isdigit()}
    comp: Computation | None = compute(tables, core)
    if comp is not None:
        row = next((p for p in ranked if p.kind == "table-row" and p.page == comp.page), ranked[0])
        return EvidenceAnswer(comp.text, "computed", 0.0, f"{comp.source}: {comp.shown}", comp.page, comp.shown,
                              features=_features(row, "computed", 1.0))
    q_numbers = re.findall(r"\d[\d,]*(?:\.\d+)?%?", core) if kind != "year" else []
    if kind in NUMERIC:
        # a passage without a value of the expected kind cannot hold the answer: it does not compete
        valued = [p for p in ranked if any(s.text not in q_numbers for s in find_spans(p.text, kind))] or ranked
    else:
        valued = ranked
    best = valued[0]
    if kind in NUMERIC:
        cell = best_cell(tables, core)
        if cell is not None and _one_value(cell.value):
            row = next((p for p in ranked if p.text == cell.support), None)
            if row is not None and row.score >= CELL_MARGIN * best.score:
                scale = scale_words(cell.table.title)
                support = cell.support + (f" (values in {scale})" if scale and scale not in cell.support else "")
                return EvidenceAnswer(cell.value, "table-cell", 0.0, support, row.page,
                                      features=_features(row, "table-cell", 1.0))
    if kind != "text":
        symbols = _SYMBOL.findall(core) if kind == "number" else []
        for p in ranked:  # an assignment ("k = 60") is specific enough to take from any scored passage
            for sym in symbols:
                if (v := assigned_value(p.text, sym)) is not None:
                    return EvidenceAnswer(v.text, "number", 0.0, p.text, p.page, features=_features(p, "number", 1.0))
        noun = counted_noun(core) if kind == "count" else ""
        for p in valued[:N_COUNTED]:  # "815 membership warehouses" answers "how many membership warehouses"
            if noun and (span := count_of(p.text, noun, q_numbers)) is not None:
                return EvidenceAnswer(span.text, kind, 0.0, p.text, p.page, features=_features(p, kind, 1.0))
        q_words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", core)}
        for p in valued[:3]:
            span = nearest_span(p.text, sorted(anchors), kind, exclude=q_numbers)
            if span is not None and kind == "name" and {w.lower() for w in span.text.split()} & q_words:
                continue  # a name the question itself gives is not its answer
            entry = reference_entry(units, span.text, docs[p.rank] if docs else "", docs) \
                if span is not None and kind == "citation" and _MARKER.fullmatch(span.text) else None
            if entry is not None:  # "[2]" means nothing alone: the entry it points to answers, on its page
                return EvidenceAnswer(entry.text, kind, 0.0, entry.text, entry.page,
                                      features=_features(p, kind, _adjacent(p.text, span.start, len(span.text),
                                                                            anchors)))
            if span is not None:  # the value alone (benchmarks score "412", not "412 megawatts"); the support
                return EvidenceAnswer(span.text, kind, 0.0, p.text, p.page,  # shows its unit
                                      features=_features(p, kind, _adjacent(p.text, span.start, len(span.text),
                                                                            anchors)))
    top = ranked[0]
    return EvidenceAnswer(top.text, "passage", 0.0, top.text, top.page, features=_features(top, "passage", 0.0))


def evidence_answer(question: str, pages: Sequence[Page], embedder: TextEmbedder, *,
                    threshold: float | None = None, qvec: np.ndarray | None = None,
                    confidence: AnswerConfidence | None = None, docs: Sequence[str] | None = None) -> EvidenceAnswer:
    """The evidence-first answer over ``pages`` (best first); abstains below ``threshold`` with its evidence.

    ``docs``: the document of each page, when they come from several (a citation marker resolves
    only to a reference entry of its own document).

    ``confidence``: the fitted model of P(correct) (default :data:`CONFIDENCE`); ``threshold`` overrides its
    threshold (0 never abstains, which is how a run for calibration is made)."""
    if not question.strip():
        raise ValueError("the question is empty")
    model = confidence or CONFIDENCE
    cut = model.threshold if threshold is None else threshold
    core = clean_question(question) or question
    units, tables = passages(pages)
    ranked, coverage = score_passages(core, units, embedder, qvec if core == question else None)
    if not ranked:
        return EvidenceAnswer(ABSTAIN, "abstain", 0.0)
    evidence = ranked[:N_EVIDENCE]
    chosen = _choose(question, core, ranked, tables, units, docs)
    chosen.features["coverage"] = round(coverage, 4)
    chosen.confidence = round(model.probability(chosen.features), 4)
    chosen.evidence, chosen.candidate = evidence, chosen.answer
    if chosen.confidence < cut:
        return EvidenceAnswer(ABSTAIN, "abstain", chosen.confidence, chosen.support, chosen.page,
                              chosen.computation, evidence, chosen.answer, chosen.features)
    return chosen


def answer_from_hits(store: IndexStore, question: str, hits: Sequence[Hit], cites: list[Citation],
                     embedder: TextEmbedder, *, threshold: float | None = None,
                     qvec: np.ndarray | None = None) -> Answer:
    """The evidence-first strategy as an :class:`Answer` over ranked hits; the support's page is cited first."""
    t0 = time.perf_counter()
    pages = [store.document(h.doc_id).page(h.page) for h in hits]
    ea = evidence_answer(question, pages, embedder, threshold=threshold, qvec=qvec, docs=[h.doc_id for h in hits])
    if ea.page is not None:
        cites.sort(key=lambda c: c.page != ea.page)
    return Answer(
        question,
        ea.answer,
        STRATEGY,
        cites,
        gate=f"no chat model: {ea.kind} (confidence {ea.confidence:.2f}, threshold "
             f"{CONFIDENCE.threshold if threshold is None else threshold:.2f})",
        support=ea.support,
        support_page=ea.page,
        seconds=time.perf_counter() - t0,
        confidence=ea.confidence,
        evidence=[EvidencePassage(hits[p.rank].doc_id, p.page, p.text, round(p.score, 4)) for p in ea.evidence],
        computation=ea.computation,
        candidate=ea.candidate,
        features=ea.features,
    )


class EvidenceFirstAnswer:
    """The no-model answer strategy (the default without a chat model): see the module docstring."""

    name: ClassVar[str] = "evidence"
    needs_model: ClassVar[bool] = False
    no_model: ClassVar[str | None] = None

    def answer(self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None,
               records: Sequence[CandidateRecord] = ()) -> Answer:
        from trident_local.generate.answer import citations

        metric = defined_metric(index, query.text, hits)
        if metric is not None:
            return answer_from_formula(index.store, query.text, metric, threshold=query.min_confidence)
        embedder = index.models.embedder
        return answer_from_hits(index.store, query.text, hits, citations(index.store, hits, records),
                                embedder, threshold=query.min_confidence, qvec=query.vector(embedder))


def defined_metric(index: Index, question: str, hits: Sequence[Hit]) -> FormulaAnswer | None:
    """The metric the question defines (:mod:`.formula`), or the one line item it asks for
    (:mod:`.line_item`), read from the top hit's document: from the statements the question names
    first (:mod:`.statements`), where they hold the items."""
    if not hits:
        return None
    defined = computes(question)
    if not defined and item_question(question) is None:
        return None
    doc_id = hits[0].doc_id
    kinds = named_statements(question)
    statements = _statements_of(index.store, doc_id)
    prefer = [n for n, kind in statements.items() if kind in kinds]
    lookup = index_lookup(index, doc_id, [h.page for h in hits if h.doc_id == doc_id], prefer=prefer,
                          statements=statements)
    if defined:
        return evaluate(question, lookup)
    doc = index.store.document(doc_id)
    return evaluate_item(question, lookup, own_names(doc.file_name, doc.pages[0].text if doc.pages else ""))


@lru_cache(maxsize=64)
def _statements_of(store: IndexStore, doc_id: str) -> dict[int, str]:
    """The document's statement pages (:func:`.statements.statement_kinds`), read once per document:
    20 ms for a 400-page filing, and a doc_id is its PDF's content hash."""
    return statement_kinds((p.number, p.text) for p in store.document(doc_id).pages)


def answer_from_formula(store: IndexStore, question: str, fa: FormulaAnswer, *,
                        threshold: float | None = None) -> Answer:
    """A defined metric as an :class:`Answer`: it cites the pages of its operands, each with the operand's
    cell and row label as regions; its confidence is :data:`TABLE_CONFIDENCE`'s for row labels that name
    their items as well as its operands' did."""
    t0 = time.perf_counter()
    features = {"lex": round(sum(o.match for o in fa.operands) / len(fa.operands), 4), "cos": 0.0,
                "typed": 1.0, "table": 1.0, "adjacent": 0.0, "coverage": 1.0}
    confidence = round(TABLE_CONFIDENCE.probability(features), 4)
    cut = TABLE_CONFIDENCE.threshold if threshold is None else threshold
    from trident_local.generate.answer import citations

    read = list({(o.doc_id, o.page, o.bbox): o for o in fa.operands}.values())  # a cell used twice, once
    cites = citations(store, [Hit(o.doc_id, o.page, 0.0) for o in read])  # one per page, in order
    for c in cites:
        c.regions = [r.to_dict() for o in read if (o.doc_id, o.page) == (c.doc_id, c.page) for r in o.regions()]
    first = fa.operands[0]
    how = ("computed from the question's definition" if definitions(question) else
           "computed from the metric's standard formula" if computes(question) else "read from the line item's row")
    reply = signed_reply(question, fa)
    return Answer(
        question,
        reply if confidence >= cut else ABSTAIN,
        STRATEGY,
        cites,
        gate=f"no chat model: {how} (confidence {confidence:.2f}, "
             f"threshold {cut:.2f})",
        support="; ".join(f"{o.label} ({o.year}): {o.printed} (p. {o.page})" for o in read),
        support_page=first.page,
        seconds=time.perf_counter() - t0,
        confidence=confidence,
        computation=fa.shown,
        candidate=reply,
        features=features,
    )


_SIGN_ASKED = re.compile(r"^\s*(?:does|did|is|was|were|are|has|have|had)\b[^?]*?\b(positive|negative)\b", re.I)


def signed_reply(question: str, fa: FormulaAnswer) -> str:
    """The metric's value, led by "Yes" or "No" when the question asks whether it is positive or negative
    ("Does X have positive working capital?" is answered "No: -1,561", not "-1,561")."""
    m = _SIGN_ASKED.search(question)
    if m is None:
        return fa.text
    yes = fa.value > 0 if m.group(1).lower() == "positive" else fa.value < 0
    return f"{'Yes' if yes else 'No'}: {fa.text}"
