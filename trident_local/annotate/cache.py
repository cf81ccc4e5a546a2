"""Where a document's annotation lives in the index, and reading it back.

``docs/<doc_id>/annotation.json`` is the commit point: the two vector files are
written first, then the JSON, all atomically, so a reader that finds the JSON
also finds matching vectors, and a killed run leaves either the old annotation
or none.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from trident_local.annotate.pipeline import AnnotationResult
from trident_local.annotate.records import ANNOTATION_VERSION, DocAnnotation
from trident_local.atomic import atomic_write_json, atomic_write_npy, read_json
from trident_local.errors import TridentError
from trident_local.store.index_store import IndexStore

STAGE = "annotate"
JSON_NAME = "annotation.json"
CONCEPTS_NAME = "annotation_concepts.npy"
FIELDS_NAME = "annotation_fields.npy"


@dataclass
class LoadedAnnotation:
    annotation: DocAnnotation
    concept_vecs: np.ndarray  # float32 (rows, dim)
    field_vecs: np.ndarray  # float32 (pages, fields, dim)


def paths(store: IndexStore, doc_id: str) -> tuple[Path, Path, Path]:
    d = store.doc_dir(doc_id)
    return d / JSON_NAME, d / CONCEPTS_NAME, d / FIELDS_NAME


def save(store: IndexStore, result: AnnotationResult) -> None:
    js, cv, fv = paths(store, result.annotation.doc_id)
    atomic_write_npy(cv, result.concept_vecs.astype(np.float16))
    atomic_write_npy(fv, result.field_vecs.astype(np.float16))
    atomic_write_json(js, result.annotation.to_dict())


def has_annotation(store: IndexStore, doc_id: str) -> bool:
    return paths(store, doc_id)[0].exists()


@lru_cache(maxsize=256)
def _load(js: str, mtime: float) -> LoadedAnnotation:
    p = Path(js)
    data = read_json(p)
    if data.get("version") != ANNOTATION_VERSION:
        raise TridentError(
            f"{p} is annotation version {data.get('version')}, this code reads "
            f"{ANNOTATION_VERSION}; re-run `trident annotate --force`"
        )
    ann = DocAnnotation.from_dict(data)
    cv = np.load(p.with_name(CONCEPTS_NAME)).astype(np.float32)
    fv = np.load(p.with_name(FIELDS_NAME)).astype(np.float32)
    return LoadedAnnotation(ann, cv, fv)


def load(store: IndexStore, doc_id: str) -> LoadedAnnotation:
    """The annotation of ``doc_id``; a clear error when the document was not annotated."""
    js = paths(store, doc_id)[0]
    if not js.exists():
        name = store.manifest.documents[doc_id].file_name if doc_id in store.manifest.documents else doc_id
        raise TridentError(f"{name} has no annotation yet; run `trident annotate --index {store.root}`")
    return _load(str(js), js.stat().st_mtime)
