"""BM25 over page text (bm25s, English stemming and stop words)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from trident_local.docs.model import Document, Page
from trident_local.retrieve.base import Hit, top_k
from trident_local.store.atomic import atomic_write_json, read_json
from trident_local.store.index_store import IndexStore
from trident_local.store.manifest import PoolEntry
from trident_local.text import stemmer


def page_passage(page: Page) -> str:
    """What a text pool sees of a page: its section path, then its text."""
    return f"{page.section}\n{page.text}" if page.section_path else page.text


def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


class BM25Pool:
    name: ClassVar[str] = "bm25"
    needs_prepare: ClassVar[bool] = False

    def __init__(self, store: IndexStore):
        self.store = store
        self.dir = store.pool_dir(self.name)
        self._retriever = None
        self._rows: list[tuple[str, int]] = []
        self._doc_rows: dict[str, np.ndarray] = {}

    def prepare(self, doc: Document) -> None:  # BM25 needs corpus statistics: all work is in build()
        return None

    def _fingerprint(self) -> str:
        return self.store.fingerprint(self.store.doc_ids(), "bm25-v1")

    def is_stale(self) -> bool:
        e = self.store.manifest.pools.get(self.name)
        return e is None or e.fingerprint != self._fingerprint()

    def build(self) -> None:
        import bm25s

        rows, texts = [], []
        for doc_id in self.store.doc_ids():
            doc = self.store.document(doc_id)
            for p in doc.pages:
                rows.append((doc_id, p.number))
                texts.append(page_passage(p) or " ")
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), show_progress=False)
        tmp = self.dir.with_name(self.name + ".tmp")
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if tokens.vocab:  # bm25s cannot index a corpus without a single term (e.g. only scanned pages)
            retriever = bm25s.BM25()
            retriever.index(tokens, show_progress=False)
            retriever.save(str(tmp))
        atomic_write_json(tmp / "rows.json", rows)
        shutil.rmtree(self.dir, ignore_errors=True)
        tmp.rename(self.dir)
        self.store.manifest.pools[self.name] = PoolEntry(self.name, self._fingerprint(), len(rows))
        self.store.save_manifest()
        self._retriever = None

    def _load(self) -> None:
        if self._retriever is not None:  # False = loaded, but the corpus has no terms
            return
        import bm25s

        if self.is_stale():
            self.build()
        self._retriever = bm25s.BM25.load(str(self.dir)) if (self.dir / "params.index.json").exists() else False
        self._rows = [tuple(r) for r in read_json(self.dir / "rows.json")]
        by_doc: dict[str, list[int]] = {}
        for i, (d, _) in enumerate(self._rows):
            by_doc.setdefault(d, []).append(i)
        self._doc_rows = {d: np.asarray(ix) for d, ix in by_doc.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every page row for ``query``."""
        import bm25s

        self._load()
        q = bm25s.tokenize([query], stopwords="en", stemmer=stemmer(), return_ids=False, show_progress=False)
        terms = q[0] if q and q[0] else []
        if not terms or not self._retriever:
            return np.zeros(len(self._rows), dtype=np.float32)
        return np.asarray(self._retriever.get_scores(terms), dtype=np.float32)

    def retrieve(self, query: str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        s = self.scores(query)
        rows = (np.concatenate([self._doc_rows.get(d, np.empty(0, int)) for d in doc_ids])
                if doc_ids is not None else np.arange(len(self._rows)))
        if rows.size == 0:
            return []
        sub = s[rows]
        order = np.argsort(-sub, kind="stable")[: max(k * 2, k)]
        hits = [Hit(*self._rows[rows[i]], float(sub[i]), self.name) for i in order]
        return top_k(hits, k)
