"""ColPali-style page-image retrieval: per-token page vectors, exact MaxSim, FAISS-free IVF candidates.

Per document, ``prepare`` renders every page, embeds the images with the
multivector profile (ColQwen2 / ColQwen2.5 / ColPali) and stores them PACKED as
float16 (``colpali_tokens.npy`` + ``colpali_offsets.npy``): resumable per
document. ``build`` streams them, one document at a time, into one memory-mapped
packed matrix written straight into the pool's folder and, for indexes above
``IVF_MIN_PAGES`` pages, builds a token IVF (kernels.ann.TokenIVF) for candidate
generation from the per-document files as shards (kernels.ann_shards): peak memory is
one document plus the IVF's codes, whatever the index size. Questions about one
document are always scored exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from trident_local.atomic import atomic_write_json, atomic_write_npy, read_json
from trident_local.docs.model import Document
from trident_local.errors import TridentError
from trident_local.query import Query
from trident_local.retrieve.base import Hit, top_k
from trident_local.retrieve.stored import PageRows, StoredPool

if TYPE_CHECKING:
    from trident_kernels import PackedPages
    from trident_kernels.ann_shards import MapFn

IVF_MIN_PAGES = 20_000  # below this, exact MaxSim over every page is fast enough on one core
EMBED_BATCH = 4  # an H200 ran ColQwen2.5 no faster at 8-32 pages a batch (benchmarks/page_embedding.py)
PAGES_DIR = "pages"


def doc_shard(tokens_path: Path, offsets: np.ndarray) -> PackedPages:
    """One document's stored pages, memory-mapped: a shard of the pool (picklable as a partial)."""
    from trident_kernels import PackedPages

    return PackedPages(np.load(tokens_path, mmap_mode="r"), offsets)


@dataclass
class ColPaliStructure(PageRows):
    pages: Any  # trident_kernels.PackedPages
    rows: list[tuple[str, int]]
    ivf: Any = None  # trident_kernels.ann.TokenIVF above IVF_MIN_PAGES pages
    pages_dir: Path | None = None  # set by compute_into: pages already written there, save skips them


class ColPaliPool(StoredPool[ColPaliStructure]):
    name: ClassVar[str] = "colpali"
    version: ClassVar[str] = "colpali-v1"
    needs_prepare: ClassVar[bool] = True

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

        def pages():  # rendered and opened lazily, as the embedder asks: bounded memory
            for number in range(1, doc.n_pages + 1):
                with Image.open(self.store.page_image(doc.doc_id, number)) as im:
                    yield im.convert("RGB")

        # one call for the whole document, so the embedder can prepare the next batch on the
        # CPU while the GPU embeds this one
        chunks = self.embedder.embed_images(pages(), batch_size=EMBED_BATCH)
        lengths = [len(c) for c in chunks]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        dim = self.embedder.dim
        tokens = np.concatenate(chunks).astype(np.float16) if chunks else np.zeros((0, dim), np.float16)
        tok_path, off_path = self._files(doc.doc_id)
        atomic_write_npy(tok_path, tokens)
        atomic_write_npy(off_path, offsets)

    def config_parts(self) -> tuple[str, ...]:
        return (self.store.config.multivector,)

    def shards(self, doc_ids: list[str]) -> tuple[list[Callable[[], PackedPages]], list[tuple[str, int]]]:
        """Per document, a callable that maps its pages (cheap to hold and to send to a Ray task),
        and the (doc_id, page) rows of all pages in order."""
        shards, rows = [], []
        for d in doc_ids:
            tp, op = self._files(d)
            offsets = np.load(op)
            shards.append(functools.partial(doc_shard, tp, offsets))
            rows.extend((d, p) for p in range(1, len(offsets)))
        return shards, rows

    def compute(self, doc_ids: list[str]) -> ColPaliStructure:
        """In memory (a stale index's read-only fallback): the pages packed in RAM."""
        return self._compute(doc_ids, None, map)

    def compute_into(self, doc_ids: list[str], folder: Path, *, map_fn: MapFn = map) -> ColPaliStructure:
        """The pages packed straight into ``folder/pages`` (never all in RAM); ``map_fn`` runs the
        IVF's per-document token assignment."""
        return self._compute(doc_ids, folder / PAGES_DIR, map_fn)

    def _compute(self, doc_ids: list[str], pages_dir: Path | None, map_fn: MapFn) -> ColPaliStructure:
        from trident_kernels.packed import pack_shards

        shards, rows = self.shards(doc_ids)
        pages = pack_shards(shards, dim=None if shards else self.embedder.dim, dtype=np.float16,
                            directory=pages_dir)
        ivf = None
        if len(rows) >= IVF_MIN_PAGES:
            from trident_kernels.ann_shards import build_from_shards

            ivf = build_from_shards(shards, pages=pages, map_fn=map_fn)
        return ColPaliStructure(pages, rows, ivf, pages_dir)

    def save(self, s: ColPaliStructure, folder: Path) -> dict[str, Any]:
        if s.pages_dir != folder / PAGES_DIR:
            s.pages.save(folder / PAGES_DIR)
        if s.ivf is not None:
            s.ivf.save(folder / "ivf")
        atomic_write_json(folder / "rows.json", s.rows)
        return {"tokens": int(s.pages.offsets[-1]), "dim": int(s.pages.tokens.shape[1]), "ivf": s.ivf is not None,
                "profile": self.store.config.multivector}

    def read(self, folder: Path) -> ColPaliStructure:
        from trident_kernels import PackedPages

        pages = PackedPages.load(folder / PAGES_DIR, mmap=True)
        ivf = None
        if (folder / "ivf").is_dir():
            from trident_kernels.ann import TokenIVF

            ivf = TokenIVF.load(folder / "ivf", pages=pages)
        return ColPaliStructure(pages, [tuple(r) for r in read_json(folder / "rows.json")], ivf)

    def retrieve(self, query: Query | str, *, k: int = 20, doc_ids: Sequence[str] | None = None) -> list[Hit]:
        from trident_kernels import maxsim, maxsim_topk

        s = self.load()
        q = Query.of(query).multivector(self.embedder)
        if doc_ids is not None:  # one document's pages: exact MaxSim over exactly those pages
            rows = s.rows_of(doc_ids)
            if rows.size == 0:
                return []
            scores = maxsim(q, s.pages, page_indices=rows)[0].numpy()
            return top_k([Hit(*s.rows[r], float(sc), self.name) for r, sc in zip(rows, scores, strict=True)], k)
        if not s.rows:
            return []
        if s.ivf is not None:
            scores, ids = s.ivf.search(q, k=k)
        else:
            scores, ids = maxsim_topk(q, s.pages, min(k, len(s.rows)))
        return [Hit(*s.rows[int(i)], float(sc), self.name)
                for sc, i in zip(scores[0].tolist(), ids[0].tolist(), strict=True) if i >= 0]
