"""The CPU default without a VLM: an extractive answer from the selected pages, labelled as such.

Units are the sentences of each selected page and the rows of its detected
tables. A unit scores by the IDF-weighted share of the question's terms it holds
plus its embedding cosine with the question (and a small bonus for higher-ranked
pages); only the lexically best units are embedded. From the best unit, a table
cell under the header the question names, or a span of the type the question
expects (a count, a percentage, an amount, a year) is returned when one is
there, else the unit itself. When no unit shares enough with the question the answer is
"Not answerable". Nothing is generated: every word comes from a cited page.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from trident_local.docs.model import Page
from trident_local.generate.records import EXTRACTIVE, NOT_ANSWERABLE, Answer
from trident_local.models.protocols import ChatModel, TextEmbedder
from trident_local.query import Query

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.rerank.records import CandidateRecord
    from trident_local.retrieve.base import Hit
from trident_local.text import (
    expected_type,
    idf_table,
    page_sentences,
    pattern_entities,
    terms,
    weighted_overlap,
)

W_LEX, W_COS, W_RANK = 0.6, 0.4, 0.05
MIN_SUPPORT = 0.3  # fused score below which the pages are taken not to hold the answer
MAX_UNIT_WORDS = 60
MAX_EMBEDDED = 32  # only the lexically best units are embedded: embedding dominates the cost on CPU
_COUNT = re.compile(r"(?<![\w.,])\d{1,6}(?![\w.,%])")

@dataclass
class Unit:
    text: str
    page: int
    rank: int  # 0 = best page
    header: list[str] | None = None  # table rows: the header cells
    cells: list[str] | None = None  # table rows: the row's cells


def page_units(page: Page, rank: int) -> list[Unit]:
    units = []
    for block in page_sentences(page.text):
        s = " ".join(block.split())
        if len(s) >= 3:
            units.append(Unit(" ".join(s.split()[:MAX_UNIT_WORDS]), page.number, rank))
    for o in page.objects:
        if o.type == "table" and o.text:
            lines = o.text.splitlines()
            header = [c.strip() for c in lines[0].split(" | ")]
            for row in lines[1:]:
                cells = [c.strip() for c in row.split(" | ")]
                units.append(
                    Unit(f"{o.label}: {lines[0]} || {row}".strip(" :"), page.number, rank, header, cells)
                )
    return units


def pick_cell(unit: Unit, question: str) -> str | None:
    """In a table row, the cell under the header the question names best (never the row label)."""
    if not unit.header or not unit.cells or len(unit.cells) != len(unit.header) or len(unit.cells) < 2:
        return None
    q = set(terms(question))
    scores = [len(q & set(terms(h))) for h in unit.header[1:]]
    if not scores or max(scores) == 0:
        return None
    col = 1 + scores.index(max(scores))
    return unit.cells[col] or None


def _spans(unit: str, kind: str) -> list[tuple[int, str]]:
    """(position, text) of spans of the expected kind in a unit."""
    if kind == "count":
        return [
            (m.start(), m.group(0))
            for m in _COUNT.finditer(unit)
            if not re.fullmatch(r"(19|20)\d{2}", m.group(0))
        ]
    types = {
        "percent": ("percent",),
        "money": ("money",),
        "year": ("date",),
        "number": ("number", "percent", "money"),
    }[kind]
    out = []
    for e in pattern_entities(unit):
        if e.type in types:
            out.append((unit.find(e.text), e.text))
    return out


def pick_span(unit: str, question_terms: Sequence[str], kind: str) -> str | None:
    """The span of the expected kind nearest to where the question's terms occur in the unit.

    A value usually follows what it measures ("curtailment fell to 2.3%"), so a
    span before an anchor counts as three times as far as one after it.
    """
    spans = _spans(unit, kind)
    if not spans:
        return None
    low = unit.lower()
    anchors = [(i, i + len(t)) for t in question_terms if t and (i := low.find(t)) >= 0] or [(0, 0)]

    def distance(span: tuple[int, str]) -> float:
        start, text = span
        return min(
            start - end if start >= end else 3 * max(0, a_start - (start + len(text)))
            for a_start, end in anchors
        )

    return min(spans, key=distance)[1]


@dataclass
class Extracted:
    answer: str
    support: str
    page: int | None
    score: float


def extract_answer(
    question: str | Query, pages: Sequence[Page], embedder: TextEmbedder, min_support: float = MIN_SUPPORT
) -> Extracted:
    """Best-supported unit of the pages (given best first) and the answer span taken from it."""
    query = Query.of(question)
    question = query.text
    units = [u for rank, p in enumerate(pages) for u in page_units(p, rank)]
    q_terms = terms(question)
    if not units or not q_terms:
        return Extracted(NOT_ANSWERABLE, "", None, 0.0)
    unit_terms = [terms(u.text) for u in units]
    idf = idf_table(unit_terms)
    default = float(np.log(1.0 + len(units)))
    lex = np.array([weighted_overlap(q_terms, t, idf, default) for t in unit_terms], dtype=np.float32)
    rank_bonus = np.array([W_RANK / (1 + u.rank) for u in units], dtype=np.float32)
    keep = np.argsort(-(lex + rank_bonus), kind="stable")[:MAX_EMBEDDED]
    units, lex, rank_bonus = [units[i] for i in keep], lex[keep], rank_bonus[keep]
    vecs = embedder.encode([u.text for u in units], kind="passage")
    cos = vecs @ query.vector(embedder)
    score = W_LEX * lex + W_COS * np.clip(cos, 0, None) + rank_bonus
    best = int(np.argmax(score))
    unit = units[best]
    if float(score[best]) < min_support:
        return Extracted(NOT_ANSWERABLE, unit.text, unit.page, float(score[best]))
    cell = pick_cell(unit, question)
    if cell:
        return Extracted(cell, unit.text, unit.page, float(score[best]))
    kind = expected_type(question)
    if kind != "text":
        surface = [w.lower() for w in re.findall(r"[A-Za-z]{3,}", question)]
        for i in np.argsort(-score)[:3]:  # the best unit first, then two runners-up
            span = pick_span(units[int(i)].text, surface, kind)
            if span:
                u = units[int(i)]
                return Extracted(span, u.text, u.page, float(score[int(i)]))
    return Extracted(unit.text, unit.text, unit.page, float(score[best]))


class ExtractiveAnswer:
    """The no-model strategy: every word of the answer comes from a cited page."""

    name: ClassVar[str] = "extractive"
    needs_model: ClassVar[bool] = False
    no_model: ClassVar[str | None] = None

    def answer(self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None,
               records: Sequence[CandidateRecord] = ()) -> Answer:
        from trident_local.generate.answer import citations

        t0 = time.perf_counter()
        store = index.store
        cites = citations(store, hits, records)
        pages = [store.document(h.doc_id).page(h.page) for h in hits]
        ex = extract_answer(query, pages, index.models.embedder)
        if ex.page is not None:  # the supporting page first
            cites.sort(key=lambda c: c.page != ex.page)
        return Answer(
            query.text,
            ex.answer,
            EXTRACTIVE,
            cites,
            gate="no chat model: extractive" if chat is None else "extractive",
            support=ex.support,
            support_page=ex.page,
            seconds=time.perf_counter() - t0,
        )
