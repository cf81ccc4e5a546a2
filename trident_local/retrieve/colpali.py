"""ColPali-style page-image retrieval: per-token page vectors, exact MaxSim, FAISS-free IVF candidates.

Per document, ``prepare`` renders every page, embeds the images with the
multivector profile (ColQwen2 / ColQwen2.5 / ColPali) and stores them PACKED as
float16 (``colpali_tokens.npy`` + ``colpali_offsets.npy``): resumable per
document. ``build`` concatenates them into one memory-mapped packed matrix and,
for indexes above ``IVF_MIN_PAGES`` pages, a token IVF (kernels.ann.TokenIVF) for
candidate generation. Questions about one document are always scored exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from trident_local.docs.model import Document
from trident_local.errors import TridentError
from trident_local.models.runtime import Models
from trident_local.query import Query
from trident_local.retrieve.base import Hit, top_k
from trident_local.store.atomic import atomic_write_json, atomic_write_npy, read_json
from trident_local.store.index_store import IndexStore
from trident_local.store.manifest import PoolEntry

IVF_MIN_PAGES = 20_000  # below this, exact MaxSim over every page is fast enough on one core
EMBED_BATCH = 4


class ColPaliPool:
    name: ClassVar[str] = "colpali"
    needs_prepare: ClassVar[bool] = True

    def __init__(self, store: IndexStore, models: Models | None = None):
        self.store = store
        self.dir = store.pool_dir(self.name)
        self.models = models if models is not None else Models(store.config)
        self._pages = None
        self._rows: list[tuple[str, int]] = []
        self._doc_rows: dict[str, np.ndarray] = {}
        self._ivf = None

    @property
    def embedder(self):
        if not self.models.has("multivector"):
            raise TridentError("the colpali pool needs a multivector profile: index with "
                               "`--pools bm25,dense,colpali` and set `multivector` (e.g. colqwen2.5) in the config")
        return self.models.multivector

    def _files(self, doc_id: str):
        d = self.store.doc_dir(doc_id)
        return d / "colpali_tokens.npy", d / "colpali_offsets.npy"

    def prepare(self, doc: Document) -> None:
        from PIL import Image

        chunks: list[np.ndarray] = []
        for start in range(0, doc.n_pages, EMBED_BATCH):  # render lazily, a batch at a time: bounded memory
            images = []
            for number in range(start + 1, min(start + EMBED_BATCH, doc.n_pages) + 1):
                with Image.open(self.store.page_image(doc.doc_id, number)) as im:
                    images.append(im.convert("RGB"))
            chunks.extend(self.embedder.embed_images(images, batch_size=EMBED_BATCH))
        lengths = [len(c) for c in chunks]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        dim = self.embedder.dim
        tokens = np.concatenate(chunks).astype(np.float16) if chunks else np.zeros((0, dim), np.float16)
        tok_path, off_path = self._files(doc.doc_id)
        atomic_write_npy(tok_path, tokens)
        atomic_write_npy(off_path, offsets)

    def _fingerprint(self) -> str:
        return self.store.fingerprint(self.store.doc_ids(["ingest", self.name]), "colpali-v1",
                                      self.store.config.multivector)

    def is_stale(self) -> bool:
        e = self.store.manifest.pools.get(self.name)
        return e is None or e.fingerprint != self._fingerprint() or not (self.dir / "rows.json").exists()

    def build(self) -> None:
        from trident_kernels import PackedPages

        doc_ids = self.store.doc_ids(["ingest", self.name])
        tokens, offsets, rows = [], [np.zeros(1, np.int64)], []
        total = 0
        for d in doc_ids:
            tp, op = self._files(d)
            t, o = np.load(tp, mmap_mode="r"), np.load(op)
            tokens.append(np.asarray(t))
            offsets.append(o[1:] + total)
            total += int(o[-1])
            rows.extend((d, p) for p in range(1, len(o)))
        dim = tokens[0].shape[1] if tokens else self.embedder.dim
        packed = PackedPages(np.concatenate(tokens) if tokens else np.zeros((0, dim), np.float16),
                             np.concatenate(offsets))
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)
        packed.save(self.dir / "pages")
        if len(rows) >= IVF_MIN_PAGES:
            from trident_kernels.ann import TokenIVF

            TokenIVF.build(packed).save(self.dir / "ivf")
        atomic_write_json(self.dir / "rows.json", rows)
        self.store.manifest.pools[self.name] = PoolEntry(
            self.name, self._fingerprint(), len(rows),
            info={"tokens": int(total), "dim": int(dim), "ivf": len(rows) >= IVF_MIN_PAGES,
                  "profile": self.store.config.multivector})
        self.store.save_manifest()
        self._pages = None

    def _load(self) -> None:
        if self._pages is not None:
            return
        from trident_kernels import PackedPages

        if self.is_stale():
            self.build()
        self._pages = PackedPages.load(self.dir / "pages", mmap=True)
        self._rows = [tuple(r) for r in read_json(self.dir / "rows.json")]
        by_doc: dict[str, list[int]] = {}
        for i, (d, _) in enumerate(self._rows):
            by_doc.setdefault(d, []).append(i)
        self._doc_rows = {d: np.asarray(ix, dtype=np.int64) for d, ix in by_doc.items()}
        if (self.dir / "ivf").is_dir():
            from trident_kernels.ann import TokenIVF

            self._ivf = TokenIVF.load(self.dir / "ivf", pages=self._pages)

    def retrieve(self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        from trident_kernels import maxsim, maxsim_topk

        self._load()
        q = Query.of(query).multivector(self.embedder)
        if doc_ids is not None:  # one document's pages: exact MaxSim over exactly those pages
            rows = np.concatenate([self._doc_rows.get(d, np.empty(0, np.int64)) for d in doc_ids])
            if rows.size == 0:
                return []
            scores = maxsim(q, self._pages, page_indices=rows)[0].numpy()
            return top_k([Hit(*self._rows[r], float(s), self.name) for r, s in zip(rows, scores, strict=True)], k)
        if not self._rows:
            return []
        if self._ivf is not None:
            scores, ids = self._ivf.search(q, k=k)
        else:
            scores, ids = maxsim_topk(q, self._pages, min(k, len(self._rows)))
        return [Hit(*self._rows[int(i)], float(s), self.name)
                for s, i in zip(scores[0].tolist(), ids[0].tolist(), strict=True) if i >= 0]
