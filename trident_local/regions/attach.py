"""Regions for what the index hands out: each search hit's best-matching rows, each cited page's cells
or rows that carry the answer (no model call: matching on the cited pages after generation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trident_local.regions.layout import PageLayout, Region, page_layout
from trident_local.regions.locate import answer_regions, question_regions

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.retrieve.base import Hit
    from trident_local.store.index_store import IndexStore


def layout_of(index: Index | IndexStore, doc_id: str, page: int) -> PageLayout:
    """The page's layout from its source PDF; the blocks stored at ingest where the source is gone."""
    store = getattr(index, "store", index)
    entry = store.manifest.documents[doc_id]
    stored = store.document(doc_id).page(page)
    return page_layout(entry.path, page, stored.blocks, (stored.width, stored.height))


def hit_regions(index: Index, question: str, hit: Hit, n: int = 5) -> list[Region]:
    """The ``n`` rows or lines of the hit's page that best match the question."""
    return question_regions(layout_of(index, hit.doc_id, hit.page), question, n)


def citation_regions(index: Index, question: str, answer: str, citations: Sequence[Any]) -> None:
    """Set ``regions`` on every citation (anything with doc_id, page and regions): where the answer's
    values or words sit on that page; with ``answer`` "" (an abstention) the rows that match the question."""
    for c in citations:
        lay = layout_of(index, c.doc_id, c.page)
        regs = answer_regions(lay, answer, question) if answer else question_regions(lay, question)
        c.regions = [r.to_dict() for r in regs]
