"""The base of pools with a global structure on disk: fingerprint, build, atomic swap, load.

A built structure lives in ``INDEX/pools/<name>@<fingerprint>/`` and the pool's
manifest entry names it. ``build`` writes a temp folder, renames it into place,
then rewrites the manifest (the commit point) and removes the superseded folder:
a kill at any moment leaves the previous structure in use.

Only the index writer builds, under the writer lock. ``load`` (and so
``retrieve``) never writes: when the structure on disk is stale (documents were
completed or removed since it was built) it is built in memory from the complete
documents, with a warning that rebuilding it is ``trident index``'s job.
"""

from __future__ import annotations

import logging
import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np

from trident_local.errors import TridentError
from trident_local.retrieve.base import prepare_stages
from trident_local.store.index_store import IndexStore
from trident_local.store.manifest import PoolEntry

if TYPE_CHECKING:
    from trident_kernels.ann_shards import MapFn
    from trident_local.models.runtime import Models

log = logging.getLogger(__name__)

S = TypeVar("S")


def complete_stages(store: IndexStore) -> list[str]:
    """Every stage a document passes before the index's pools may cover it."""
    return ["ingest", *prepare_stages(store.config.pools)]


def complete_doc_ids(store: IndexStore) -> list[str]:
    """Documents with every stage done, in the order they were added."""
    return store.doc_ids(complete_stages(store))


def rows_by_doc(rows: Sequence[tuple[str, int]]) -> dict[str, np.ndarray]:
    """doc_id -> the positions of its (doc_id, page) rows, for per-document retrieval."""
    by_doc: dict[str, list[int]] = {}
    for i, (d, _) in enumerate(rows):
        by_doc.setdefault(d, []).append(i)
    return {d: np.asarray(ix, dtype=np.int64) for d, ix in by_doc.items()}


class PageRows:
    """For a pool structure with one row per (doc_id, page) in ``rows``: each document's rows."""

    rows: list[tuple[str, int]]

    @cached_property
    def doc_rows(self) -> dict[str, np.ndarray]:
        """doc_id -> the positions of its rows (:func:`rows_by_doc`)."""
        return rows_by_doc(self.rows)

    def rows_of(self, doc_ids: Sequence[str]) -> np.ndarray:
        """The positions of the rows of ``doc_ids``, document by document."""
        return np.concatenate([self.doc_rows.get(d, np.empty(0, np.int64)) for d in doc_ids])


class StoredPool(ABC, Generic[S]):
    """A pool whose global structure ``S`` is computed from the complete documents and stored.

    Subclasses give ``version`` and three hooks: ``compute`` (the structure, in
    memory), ``save`` (write it into a folder; returns manifest info) and ``read``
    (the structure back from such a folder). A structure larger than RAM overrides
    ``compute_into`` too, to write its big arrays straight into the folder being built.
    """

    name: ClassVar[str]
    version: ClassVar[str]  # bump when the stored format or its inputs change
    needs_prepare: ClassVar[bool] = False

    def __init__(self, store: IndexStore, models: Models | None = None):
        from trident_local.models.runtime import Models as _Models

        self.store = store
        self.models = models if models is not None else _Models(store.config)
        self._structure: S | None = None
        self.in_memory = False  # True when the structure on disk was stale and a copy was built in memory

    # -- hooks -----------------------------------------------------------------------------------
    def prepare(self, doc: Any) -> None:  # per-document features, for pools with needs_prepare
        return None

    def config_parts(self) -> tuple[str, ...]:
        """Config values the structure depends on (e.g. the embedder profile)."""
        return ()

    @abstractmethod
    def compute(self, doc_ids: list[str]) -> S: ...

    def compute_into(self, doc_ids: list[str], folder: Path, *, map_fn: MapFn = map) -> S:
        """The structure, free to write files into ``folder`` (the temp folder ``save`` then
        writes into, renamed into place as a whole) instead of holding them in memory.
        ``map_fn`` runs independent per-shard work (``map``; Ray tasks under ``--ray``)."""
        return self.compute(doc_ids)

    @abstractmethod
    def save(self, structure: S, folder: Path) -> dict[str, Any]: ...

    @abstractmethod
    def read(self, folder: Path) -> S: ...

    # -- what the structure covers ---------------------------------------------------------------
    def documents(self) -> list[str]:
        """The documents the structure covers: the complete ones."""
        if self.needs_prepare and self.name not in prepare_stages(self.store.config.pools):
            raise TridentError(f"{self.store.root} was indexed without the {self.name} pool "
                               f"(its pools: {', '.join(self.store.config.pools)}); add it to the index's pools")
        return complete_doc_ids(self.store)

    def fingerprint(self, doc_ids: Sequence[str] | None = None) -> str:
        docs = self.documents() if doc_ids is None else list(doc_ids)
        return self.store.fingerprint(docs, self.version, *self.config_parts())

    def folder(self) -> Path | None:
        """The built structure's folder, or None when none was built (or it is missing)."""
        entry = self.store.manifest.pools.get(self.name)
        if entry is None:
            return None
        folder = self.store.pool_dir(entry.path or self.name)  # no path: written before versioned folders
        return folder if folder.is_dir() else None

    def is_stale(self) -> bool:
        entry = self.store.manifest.pools.get(self.name)
        return entry is None or self.folder() is None or entry.fingerprint != self.fingerprint()

    # -- the writer ------------------------------------------------------------------------------
    def build(self, *, map_fn: MapFn = map) -> None:
        """Compute into a temp folder, save there, swap it in, commit the manifest. Writer lock held."""
        doc_ids = self.documents()
        fp = self.fingerprint(doc_ids)
        final = self.store.pool_dir(f"{self.name}@{fp}")
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            structure = self.compute_into(doc_ids, tmp, map_fn=map_fn)
            info = self.save(structure, tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(final, ignore_errors=True)  # left by a build killed after its rename
        os.rename(tmp, final)
        n_pages = sum(self.store.manifest.documents[d].n_pages for d in doc_ids)
        self.store.manifest.pools[self.name] = PoolEntry(self.name, fp, n_pages, info=info, path=final.name)
        self.store.save_manifest()
        self._remove_superseded(final)
        self._structure, self.in_memory = structure, False

    def _remove_superseded(self, keep: Path) -> None:
        root = keep.parent
        for p in [root / self.name, *root.glob(f"{self.name}@*"), *root.glob(f".{self.name}@*.tmp")]:
            if p != keep and p.is_dir():
                shutil.rmtree(p, ignore_errors=True)

    # -- readers ---------------------------------------------------------------------------------
    def load(self) -> S:
        """The structure: from disk when current, else computed in memory (never written)."""
        if self._structure is None:
            folder = self.folder()
            if folder is not None and not self.is_stale():
                self._structure, self.in_memory = self.read(folder), False
            else:
                log.warning("the %s pool of %s is %s; searching a copy built in memory from the complete "
                            "documents (run `trident index` on %s to rebuild it)", self.name, self.store.root,
                            "not built" if folder is None else "out of date", self.store.root)
                self._structure, self.in_memory = self.compute(self.documents()), True
        return self._structure
