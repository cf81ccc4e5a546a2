"""Dense retrieval: page text in word windows, embedded, FAISS inner product; a page scores its best window.

Per-document window embeddings are written at prepare time (resumable per
document); ``build`` only stacks them into a FAISS index, so adding a document
never re-embeds the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from trident_local.docs.model import Document
from trident_local.models.runtime import Models
from trident_local.query import Query
from trident_local.retrieve.base import Hit, top_k
from trident_local.retrieve.bm25 import page_passage
from trident_local.retrieve.chunking import windows
from trident_local.store.atomic import atomic_write_json, atomic_write_npy, read_json
from trident_local.store.index_store import IndexStore
from trident_local.store.manifest import PoolEntry


class DensePool:
    name: ClassVar[str] = "dense"
    needs_prepare: ClassVar[bool] = True

    def __init__(self, store: IndexStore, models: Models | None = None):
        self.store = store
        self.dir = store.pool_dir(self.name)
        self.models = models if models is not None else Models(store.config)
        self._index = None
        self._vecs: np.ndarray | None = None
        self._row_doc: np.ndarray | None = None
        self._row_page: np.ndarray | None = None
        self._doc_slices: dict[str, slice] = {}
        self._doc_ids: list[str] = []

    @property
    def embedder(self):
        return self.models.embedder

    # -- per document ----------------------------------------------------------------------------
    def _files(self, doc_id: str):
        d = self.store.doc_dir(doc_id)
        return d / "dense.npy", d / "dense_pages.npy"

    def prepare(self, doc: Document) -> None:
        cfg = self.store.config
        texts, pages = [], []
        for p in doc.pages:
            for w in windows(page_passage(p), cfg.chunk_words, cfg.chunk_stride):
                texts.append(w)
                pages.append(p.number)
        vecs = (self.embedder.encode(texts, kind="passage") if texts
                else np.zeros((0, self.embedder.dim), np.float32))
        vec_path, page_path = self._files(doc.doc_id)
        atomic_write_npy(vec_path, vecs.astype(np.float16))
        atomic_write_npy(page_path, np.asarray(pages, dtype=np.int32))

    # -- global ------------------------------------------------------------------------------------
    def _fingerprint(self) -> str:
        return self.store.fingerprint(self.store.doc_ids(["ingest", self.name]), "dense-v1", self.store.config.embedder)

    def is_stale(self) -> bool:
        e = self.store.manifest.pools.get(self.name)
        return e is None or e.fingerprint != self._fingerprint() or not (self.dir / "vectors.npy").exists()

    def build(self) -> None:
        doc_ids = self.store.doc_ids(["ingest", self.name])
        vecs, row_doc, row_page, slices = [], [], [], {}
        start = 0
        for i, d in enumerate(doc_ids):
            vp, pp = self._files(d)
            v, p = np.load(vp), np.load(pp)
            vecs.append(v)
            row_doc.append(np.full(len(p), i, np.int32))
            row_page.append(p)
            slices[d] = [start, start + len(p)]
            start += len(p)
        dim = self.embedder.dim if not vecs else vecs[0].shape[1]
        all_vecs = np.concatenate(vecs) if vecs else np.zeros((0, dim), np.float16)
        atomic_write_npy(self.dir / "vectors.npy", all_vecs)
        atomic_write_npy(self.dir / "row_doc.npy", np.concatenate(row_doc) if row_doc else np.zeros(0, np.int32))
        atomic_write_npy(self.dir / "row_page.npy", np.concatenate(row_page) if row_page else np.zeros(0, np.int32))
        atomic_write_json(self.dir / "docs.json", {"doc_ids": doc_ids, "slices": slices})
        self.store.manifest.pools[self.name] = PoolEntry(
            self.name, self._fingerprint(), int(sum(self.store.manifest.documents[d].n_pages for d in doc_ids)),
            info={"windows": int(start), "embedder": self.store.config.embedder, "dim": int(dim)},
        )
        self.store.save_manifest()
        self._index = None

    def _load(self) -> None:
        if self._index is not None:
            return
        import faiss

        if self.is_stale():
            self.build()
        self._vecs = np.load(self.dir / "vectors.npy").astype(np.float32)
        self._row_doc = np.load(self.dir / "row_doc.npy")
        self._row_page = np.load(self.dir / "row_page.npy")
        meta = read_json(self.dir / "docs.json")
        self._doc_ids = meta["doc_ids"]
        self._doc_slices = {d: slice(*s) for d, s in meta["slices"].items()}
        index = faiss.IndexFlatIP(self._vecs.shape[1])
        if len(self._vecs):
            index.add(self._vecs)
        self._index = index

    def _pages_from_rows(self, rows: np.ndarray, scores: np.ndarray, k: int) -> list[Hit]:
        best: dict[tuple[str, int], float] = {}
        for r, s in zip(rows.tolist(), scores.tolist(), strict=True):
            if r < 0:
                continue
            key = (self._doc_ids[self._row_doc[r]], int(self._row_page[r]))
            if s > best.get(key, -np.inf):
                best[key] = s
        return top_k([Hit(d, p, float(s), self.name) for (d, p), s in best.items()], k)

    def retrieve(self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        self._load()
        q = Query.of(query).vector(self.embedder).astype(np.float32)[None, :]
        if doc_ids is not None:  # exact scoring over the documents' windows
            rows = np.concatenate([np.arange(self._doc_slices[d].start, self._doc_slices[d].stop)
                                   for d in doc_ids if d in self._doc_slices] or [np.zeros(0, int)])
            if rows.size == 0:
                return []
            return self._pages_from_rows(rows, self._vecs[rows] @ q[0], k)
        n = self._index.ntotal
        fetch = min(n, k * 8)
        while True:  # windows -> pages: fetch more windows until k distinct pages are found
            scores, rows = self._index.search(q, fetch)
            hits = self._pages_from_rows(rows[0], scores[0], k)
            if len(hits) >= k or fetch >= n:
                return hits
            fetch = min(n, fetch * 4)
