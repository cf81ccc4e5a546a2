"""Answer a question from the selected pages: plain, lenses + synthesis, or the extractive CPU default.

answer = answer_question(index, question, hits, mode="auto", chat=model)
answer.text, answer.citations
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from trident_local.generate.gate import answer_type, gate
from trident_local.generate.records import EXTRACTIVE, Answer, Citation
from trident_local.models.protocols import ChatModel, TextEmbedder
from trident_local.retrieve.base import Hit
from trident_local.store.index_store import IndexStore

MODES = ("plain", "lenses", "auto")


def citations(
    store: IndexStore, hits: Sequence[Hit], concept_hits: dict[tuple[str, int], list[str]] | None = None
) -> list[Citation]:
    """The cited pages with their record fields (from the annotation when there is one)."""
    from trident_local.annotate import has_annotation, load

    out = []
    seen: set[tuple[str, int]] = set()
    for h in hits:
        if (h.doc_id, h.page) in seen:  # one page is cited once, where it ranks best
            continue
        seen.add((h.doc_id, h.page))
        doc = store.document(h.doc_id)
        c = Citation(h.doc_id, doc.file_name, h.page, concept_hits=(concept_hits or {}).get(h.key, []))
        if has_annotation(store, h.doc_id):
            rec = load(store, h.doc_id).annotation.page(h.page)
            c.section, c.visual, c.entities, c.text = rec.section, rec.visual, rec.entity_tags(), rec.snippet
        else:
            page = doc.page(h.page)
            c.section, c.text = page.section, " ".join(page.text.split())[:600]
        out.append(c)
    return out


def answer_question(
    store: IndexStore,
    question: str,
    hits: Sequence[Hit],
    *,
    mode: str = "auto",
    chat: ChatModel | None = None,
    chat_name: str = "chat",
    embedder: TextEmbedder | None = None,
    concept_hits: dict[tuple[str, int], list[str]] | None = None,
) -> Answer:
    """An answer citing ``hits`` (best first); without ``chat`` the extractive default runs."""
    t0 = time.perf_counter()
    cites = citations(store, hits, concept_hits)
    if chat is None:
        from trident_local.generate.extractive import extract_answer

        if embedder is None:
            from trident_local.models.profiles import build_model

            embedder = build_model("embedder", store.config.embedder)
        pages = [store.document(h.doc_id).page(h.page) for h in hits]
        ex = extract_answer(question, pages, embedder)
        if ex.page is not None:  # the supporting page first
            cites.sort(key=lambda c: c.page != ex.page)
        return Answer(
            question,
            ex.answer,
            EXTRACTIVE,
            cites,
            gate="no chat model: extractive",
            support=ex.support,
            support_page=ex.page,
            seconds=time.perf_counter() - t0,
        )

    from trident_local.generate import model_answer
    from trident_local.generate.pages import page_content

    chosen, reason = gate(question, mode)
    content = page_content(store, hits, chat)
    if chosen == "plain":
        text, errors = model_answer.plain(chat, question, content)
        ans = Answer(question, text, f"plain:{chat_name}", cites, gate=reason, errors=errors)
    else:
        out = model_answer.lenses(chat, question, content, answer_type(question))
        ans = Answer(
            question,
            out.answer,
            f"lenses:{chat_name}",
            cites,
            gate=reason,
            lenses=out.lenses,
            synthesis=out.how,
            errors=out.errors,
        )
    ans.seconds = time.perf_counter() - t0
    return ans
