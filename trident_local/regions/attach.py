"""Regions for what the index hands out: each search hit's best-matching rows, each cited page's cells
or rows that carry the answer (no model call: matching on the cited pages after generation)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from trident_local.query import Query
from trident_local.regions.describe import located_answer
from trident_local.regions.layout import PageLayout, Region, page_layout
from trident_local.regions.locate import (
    answer_regions,
    numbers,
    question_regions,
    question_row_scores,
    row_region,
)

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import TextEmbedder
    from trident_local.retrieve.base import Hit
    from trident_local.store.index_store import IndexStore


def layout_of(index: Index | IndexStore, doc_id: str, page: int) -> PageLayout:
    """The page's layout from the line boxes the index stored (its source PDF's words for an index built
    before they were); built once per page: an answer, its self-check and the verifier's window pages
    all read the same pages (a doc_id is its PDF's content hash, so a page's layout never changes)."""
    return _layout(getattr(index, "store", index), doc_id, page)


@lru_cache(maxsize=256)
def _layout(store: IndexStore, doc_id: str, page: int) -> PageLayout:
    entry = store.manifest.documents[doc_id]
    stored = store.document(doc_id).page(page)
    return page_layout(entry.path, page, stored.blocks or stored.ocr_blocks, (stored.width, stored.height))


# Rows handed out for a ranked list of search hits: ROWS_PER_HIT per hit (at least MIN_ROWS), shared
# among the pages by row score times PAGE_PRIOR ** rank, each page keeping its best row. A page whose
# rows match the question well gets more of them than a fixed split by rank would give it (calib half of
# the MMLongBench-Doc document split: region hit@5 0.505 -> 0.543 over the split (10, 5, 4, 3, 3) of the
# same 25 rows; PAGE_PRIOR 0.5-0.8 all gain there; benchmarks/grounding.py for the other sets).
ROWS_PER_HIT = 5
MIN_ROWS = 10
PAGE_PRIOR = 0.7


class RowVectors:
    """The embeddings of pages' rows (one per row of a page's layout), kept for the 256 pages searched last:
    a page's rows never change, and embedding them is most of a cold search's cost on a CPU. The rows of
    every page not kept yet are embedded in ONE encoder call (a search's five pages together: fewer,
    fuller batches than a call per page)."""

    def __init__(self, maxsize: int = 256):
        self.maxsize = maxsize
        self._kept: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def cache_clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __call__(self, store: IndexStore, embedder: TextEmbedder, pages: Sequence[tuple[str, int]]) -> list[np.ndarray]:
        keys = [(store, embedder, doc_id, page) for doc_id, page in pages]  # as lru_cache keys them
        with self._lock:
            found = {k: self._kept[k] for k in keys if k in self._kept}
            for k in found:
                self._kept.move_to_end(k)
        missing = list(dict.fromkeys((k, key) for k, key in zip(keys, pages, strict=True) if k not in found))
        rows = [[r.text for r in _layout(store, doc_id, page).rows] for _, (doc_id, page) in missing]
        texts = [t for page_rows in rows for t in page_rows]
        vecs = np.asarray(embedder.encode(texts, kind="passage"), dtype=np.float32) if texts else None
        start = 0
        with self._lock:
            for (k, _), page_rows in zip(missing, rows, strict=True):
                found[k] = vecs[start:start + len(page_rows)] if page_rows else np.zeros((0, 1), dtype=np.float32)
                start += len(page_rows)
                self._kept[k] = found[k]
            while len(self._kept) > self.maxsize:
                self._kept.popitem(last=False)
        return [found[k] for k in keys]


row_vectors = RowVectors()


def search_regions(index: Index, question: str | Query, hits: Sequence[Hit], *,
                   by_embedding: bool = True) -> list[list[Region]]:
    """For each hit, in order, the rows or lines of its page that best match the question, best first
    (see PAGE_PRIOR: the rows are shared among the hits' pages by score, the first pages favoured). On an
    index with the dense pool the rows also score by their embedding cosine with the question (the
    query's vector is reused when ``question`` is the :class:`Query` the pool searched with;
    ``by_embedding`` False ranks by words alone)."""
    query = Query.of(question)
    layouts = [layout_of(index, h.doc_id, h.page) for h in hits]
    sims: list[np.ndarray | None] = [None] * len(hits)
    if by_embedding and "dense" in index.store.config.pools and hits:
        embedder = index.models.embedder
        qv = np.asarray(query.vector(embedder), dtype=np.float32).reshape(-1)
        vecs = row_vectors(index.store, embedder, [h.key for h in hits])
        sims = [v @ qv if len(v) else np.zeros(0, dtype=np.float32) for v in vecs]
    scores = [question_row_scores(lay, query.text, numbers_first=True, similarity=sim)
              for lay, sim in zip(layouts, sims, strict=True)]
    picked: list[set[int]] = [set() for _ in hits]
    rest: list[tuple[float, int, int]] = []
    for rank, page_scores in enumerate(scores):
        rows = sorted(((s * PAGE_PRIOR**rank, rank, i) for i, s in enumerate(page_scores) if s > 0),
                      key=lambda t: -t[0])
        if rows:
            picked[rank].add(rows[0][2])
            rest += rows[1:]
    left = max(MIN_ROWS, ROWS_PER_HIT * len(hits)) - sum(map(len, picked))
    for _, rank, i in sorted(rest, key=lambda t: (-t[0], t[1], t[2]))[:max(0, left)]:
        picked[rank].add(i)
    return [[row_region(lay, lay.rows[i]) for i in sorted(chosen, key=lambda i: (-page_scores[i], i))]
            for lay, page_scores, chosen in zip(layouts, scores, picked, strict=True)]


def citation_regions(index: Index, question: str, answer: str, citations: Sequence[Any]) -> list[Any]:
    """Set ``regions`` on every citation (anything with doc_id, page and regions): where the answer's
    values or words sit on that page; with ``answer`` "" (an abstention) the rows that match the question.
    A computed answer passes its computation ("95.2 - 74.5 = 20.7"): its operands are the cells.

    Returns the citations that carry the answer: where it states numbers and some cited page holds
    them, the pages that hold none of them are left out (a page cited beside the one with the value
    is not evidence for it); otherwise all of them.
    """
    for c in citations:
        lay = layout_of(index, c.doc_id, c.page)
        regs = answer_regions(lay, answer, question) if answer else question_regions(lay, question)
        c.regions = [r.to_dict() for r in regs]
    if not answer or not numbers(answer):
        return list(citations)
    return [c for c in citations if c.regions] or list(citations)


def located_text(index: Index, answer: str, citations: Sequence[Any]) -> str:
    """The answer with its unit and place ("95.2 million dollars: Coastal, 2023, Table 1, p. 2") when it
    is a bare value that the first citation locates in a table cell; "" otherwise."""
    said = numbers(answer)
    if len(said) != 1 or len(answer) > 30 or not citations:
        return ""
    c = citations[0]
    cell = next((r for r in c.regions if r["kind"] == "cell"), None)
    if cell is None or said[0] not in numbers(cell["text"]):
        return ""
    return located_answer(layout_of(index, c.doc_id, c.page), c.regions, answer.strip())
