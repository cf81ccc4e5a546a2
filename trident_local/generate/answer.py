"""Answer a question from the selected pages with a registered strategy, citing them.

answer = answer_question(index, question, hits, mode="auto", chat=model)
answer.text, answer.citations

Strategies (plain, lenses, auto, extractive) live in :mod:`trident_local.generate.base`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from trident_local.generate.base import answer_names, get_answer_strategy
from trident_local.generate.records import Answer, Citation
from trident_local.models.protocols import ChatModel
from trident_local.query import Query
from trident_local.retrieve.base import Hit
from trident_local.store.index_store import IndexStore

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.rerank.records import CandidateRecord

MODES = tuple(answer_names())


def citations(
    store: IndexStore, hits: Sequence[Hit], records: Sequence[CandidateRecord] = ()
) -> list[Citation]:
    """The cited pages with their record fields: the reranker's records when it built them, else
    read from the annotation (or, without one, the page text)."""
    from trident_local.annotate import has_annotation, load

    by_key = {(r.doc_id, r.page): r for r in records}
    out = []
    seen: set[tuple[str, int]] = set()
    for h in hits:
        if (h.doc_id, h.page) in seen:  # one page is cited once, where it ranks best
            continue
        seen.add((h.doc_id, h.page))
        doc = store.document(h.doc_id)
        rec = by_key.get(h.key)
        if rec is not None:
            out.append(Citation.from_record(rec, doc.file_name))
            continue
        c = Citation(h.doc_id, doc.file_name, h.page)
        if has_annotation(store, h.doc_id):
            page_rec = load(store, h.doc_id).annotation.page(h.page)
            c.section, c.visual = page_rec.section, page_rec.visual
            c.entities, c.text = page_rec.entity_tags(), page_rec.snippet
        else:
            page = doc.page(h.page)
            c.section, c.text = page.section, " ".join(page.text.split())[:600]
        out.append(c)
    return out


def answer_question(
    index: Index,
    question: str | Query,
    hits: Sequence[Hit],
    *,
    mode: str = "auto",
    chat: ChatModel | None = None,
    records: Sequence[CandidateRecord] = (),
) -> Answer:
    """An answer citing ``hits`` (best first) by strategy ``mode``; without ``chat`` the extractive
    no-model strategy runs."""
    return get_answer_strategy(mode, chat).answer(index, Query.of(question), hits, chat=chat, records=records)
