"""Dense retrieval: page text in word windows, embedded, FAISS inner product; a page scores its best window.

Per-document window embeddings are written at prepare time (resumable per
document); ``build`` only stacks them into a FAISS index, so adding a document
never re-embeds the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from trident_local.atomic import atomic_write_json, atomic_write_npy, read_json
from trident_local.docs.model import Document
from trident_local.query import Query
from trident_local.retrieve.base import Hit, top_k
from trident_local.retrieve.bm25 import page_passage
from trident_local.retrieve.stored import StoredPool


@dataclass
class DenseStructure:
    vectors: np.ndarray  # float32 (windows, dim)
    row_doc: np.ndarray  # window -> position in doc_ids
    row_page: np.ndarray  # window -> page number
    doc_ids: list[str]
    doc_slices: dict[str, slice]  # doc_id -> its windows
    index: Any = None  # faiss.IndexFlatIP over vectors, made on first search

    def faiss_index(self):
        if self.index is None:
            import faiss

            self.index = faiss.IndexFlatIP(self.vectors.shape[1])
            if len(self.vectors):
                self.index.add(self.vectors)
        return self.index


class DensePool(StoredPool[DenseStructure]):
    name: ClassVar[str] = "dense"
    version: ClassVar[str] = "dense-v1"
    needs_prepare: ClassVar[bool] = True

    @property
    def embedder(self):
        return self.models.embedder

    # -- per document ----------------------------------------------------------------------------
    def _files(self, doc_id: str):
        d = self.store.doc_dir(doc_id)
        return d / "dense.npy", d / "dense_pages.npy"

    def prepare(self, doc: Document) -> None:
        spec = self.store.config.windows()
        texts, pages = [], []
        for p in doc.pages:
            for w in spec.cut(page_passage(p), self.embedder):
                texts.append(w)
                pages.append(p.number)
        vecs = (self.embedder.encode(texts, kind="passage") if texts
                else np.zeros((0, self.embedder.dim), np.float32))
        vec_path, page_path = self._files(doc.doc_id)
        atomic_write_npy(vec_path, vecs.astype(np.float16))
        atomic_write_npy(page_path, np.asarray(pages, dtype=np.int32))

    # -- global ------------------------------------------------------------------------------------
    def config_parts(self) -> tuple[str, ...]:
        spec = self.store.config.windows()  # plain word windows (older indexes) keep their old fingerprint
        plain = spec.tokens <= 0 and not spec.drop_stop_words
        return (self.store.config.embedder,) + (() if plain else (spec.describe(),))

    def compute(self, doc_ids: list[str]) -> DenseStructure:
        vecs, row_doc, row_page, slices = [], [], [], {}
        start = 0
        for i, d in enumerate(doc_ids):
            vp, pp = self._files(d)
            v, p = np.load(vp), np.load(pp)
            vecs.append(v)
            row_doc.append(np.full(len(p), i, np.int32))
            row_page.append(p)
            slices[d] = slice(start, start + len(p))
            start += len(p)
        dim = self.embedder.dim if not vecs else vecs[0].shape[1]
        return DenseStructure(
            (np.concatenate(vecs) if vecs else np.zeros((0, dim), np.float16)).astype(np.float32),
            np.concatenate(row_doc) if row_doc else np.zeros(0, np.int32),
            np.concatenate(row_page) if row_page else np.zeros(0, np.int32),
            list(doc_ids), slices)

    def save(self, s: DenseStructure, folder: Path) -> dict[str, Any]:
        atomic_write_npy(folder / "vectors.npy", s.vectors.astype(np.float16))
        atomic_write_npy(folder / "row_doc.npy", s.row_doc)
        atomic_write_npy(folder / "row_page.npy", s.row_page)
        atomic_write_json(folder / "docs.json", {"doc_ids": s.doc_ids,
                                                 "slices": {d: [v.start, v.stop] for d, v in s.doc_slices.items()}})
        return {"windows": len(s.vectors), "embedder": self.store.config.embedder, "dim": int(s.vectors.shape[1])}

    def read(self, folder: Path) -> DenseStructure:
        meta = read_json(folder / "docs.json")
        return DenseStructure(np.load(folder / "vectors.npy").astype(np.float32), np.load(folder / "row_doc.npy"),
                              np.load(folder / "row_page.npy"), meta["doc_ids"],
                              {d: slice(*v) for d, v in meta["slices"].items()})

    def _pages_from_rows(self, s: DenseStructure, rows: np.ndarray, scores: np.ndarray, k: int) -> list[Hit]:
        best: dict[tuple[str, int], float] = {}
        for r, sc in zip(rows.tolist(), scores.tolist(), strict=True):
            if r < 0:
                continue
            key = (s.doc_ids[s.row_doc[r]], int(s.row_page[r]))
            if sc > best.get(key, -np.inf):
                best[key] = sc
        return top_k([Hit(d, p, float(sc), self.name) for (d, p), sc in best.items()], k)

    def retrieve(self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        s = self.load()
        q = Query.of(query).vector(self.embedder).astype(np.float32)[None, :]
        if doc_ids is not None:  # exact scoring over the documents' windows
            rows = np.concatenate([np.arange(s.doc_slices[d].start, s.doc_slices[d].stop)
                                   for d in doc_ids if d in s.doc_slices] or [np.zeros(0, int)])
            if rows.size == 0:
                return []
            return self._pages_from_rows(s, rows, s.vectors[rows] @ q[0], k)
        n = len(s.vectors)
        if n == 0:  # nothing embedded yet: faiss refuses a search for 0 neighbours
            return []
        index = s.faiss_index()
        fetch = min(n, k * 8)
        while True:  # windows -> pages: fetch more windows until k distinct pages are found
            scores, rows = index.search(q, fetch)
            hits = self._pages_from_rows(s, rows[0], scores[0], k)
            if len(hits) >= k or fetch >= n:
                return hits
            fetch = min(n, fetch * 4)
