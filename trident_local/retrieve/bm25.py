"""BM25 over page text (bm25s, English stemming and stop words).

A page is read as its printed headings (twice: a light field boost, so a statement title outweighs a
mention in passing), its section path and its text, with number spellings normalised on both sides
(:func:`~trident_local.text.keyword_text`): "1,577", "(1,577)" and "$1577.00" meet "1577".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from trident_local.atomic import atomic_write_json, read_json
from trident_local.docs.model import Page
from trident_local.docs.sections import page_headings
from trident_local.query import Query
from trident_local.retrieve.base import Hit, top_k
from trident_local.retrieve.stored import PageRows, StoredPool
from trident_local.text import keyword_text, stemmer

HEADING_WEIGHT = 2  # times a page's headings are repeated in its keyword passage


def page_passage(page: Page) -> str:
    """What a text pool sees of a page: its section path, then its text."""
    return f"{page.section}\n{page.text}" if page.section_path else page.text


def keyword_passage(page: Page) -> str:
    """What BM25 indexes of a page: its headings (boosted), then :func:`page_passage`, numbers normalised."""
    heads = " ".join(page_headings(page) * HEADING_WEIGHT)
    return keyword_text(f"{heads}\n{page_passage(page)}" if heads else page_passage(page))


def tokenize_query(query: str) -> list[str]:
    import bm25s

    q = bm25s.tokenize([keyword_text(query)], stopwords="en", stemmer=stemmer(), return_ids=False,
                       show_progress=False)
    return list(q[0]) if q and q[0] else []


@dataclass
class BM25Structure(PageRows):
    retriever: Any  # bm25s.BM25, or None when the corpus has no terms (e.g. only scanned pages)
    rows: list[tuple[str, int]]


class BM25Pool(StoredPool[BM25Structure]):
    name: ClassVar[str] = "bm25"
    version: ClassVar[str] = "bm25-v2"  # v2: headings field, numbers normalised
    needs_prepare: ClassVar[bool] = False  # BM25 needs corpus statistics: all work is in compute()

    def compute(self, doc_ids: list[str]) -> BM25Structure:
        import bm25s

        rows, texts = [], []
        for doc_id in doc_ids:
            for p in self.store.document(doc_id).pages:
                rows.append((doc_id, p.number))
                texts.append(keyword_passage(p) or " ")
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), show_progress=False)
        retriever = None
        if tokens.vocab:  # bm25s cannot index a corpus without a single term
            retriever = bm25s.BM25()
            retriever.index(tokens, show_progress=False)
        return BM25Structure(retriever, rows)

    def save(self, structure: BM25Structure, folder: Path) -> dict[str, Any]:
        if structure.retriever is not None:
            structure.retriever.save(str(folder))
        atomic_write_json(folder / "rows.json", structure.rows)
        return {}

    def read(self, folder: Path) -> BM25Structure:
        import bm25s

        retriever = bm25s.BM25.load(str(folder)) if (folder / "params.index.json").exists() else None
        return BM25Structure(retriever, [tuple(r) for r in read_json(folder / "rows.json")])

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every page row for ``query``."""
        s = self.load()
        terms = tokenize_query(query)
        if not terms or s.retriever is None:
            return np.zeros(len(s.rows), dtype=np.float32)
        return np.asarray(s.retriever.get_scores(terms), dtype=np.float32)

    def retrieve(self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        scores = self.scores(Query.of(query).text)
        s = self.load()
        rows = s.rows_of(doc_ids) if doc_ids is not None else np.arange(len(s.rows))
        if rows.size == 0:
            return []
        sub = scores[rows]
        # every row scoring at least the k-th best, ties included: top_k then breaks ties by (doc, page),
        # so the result does not depend on the order documents were added in
        cand = np.nonzero(sub >= np.partition(sub, sub.size - k)[sub.size - k])[0] if sub.size > k else range(sub.size)
        hits = [Hit(*s.rows[rows[i]], float(sub[i]), self.name) for i in cand]
        return top_k(hits, k)
