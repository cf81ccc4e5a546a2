"""Annotate one document: page records, T/E/S concepts, their names, and the vectors the rerankers use.

Each model role has a no-model strategy (the CPU default), named in
``DocAnnotation.strategies``: caption from detected objects, entities by pattern
rules, concept names from top terms. With a chat model, pages go in one batch
and concept names in a second one (names need the clusters, which need the
entities); a failed reply falls back to the no-model strategy for that item.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trident_local.annotate.bundles import entity_bundles
from trident_local.annotate.captions import object_caption
from trident_local.annotate.entities import rank_entities
from trident_local.annotate.model_calls import CallStats, NameItem, annotate_pages, name_concepts
from trident_local.annotate.records import FIELD_NAMES, Concept, DocAnnotation, PageRecord
from trident_local.annotate.structure import leaf_sections, section_weights
from trident_local.annotate.topics import cluster_topics, page_windows, window_size
from trident_local.docs.model import Document
from trident_local.models.protocols import ChatModel, TextEmbedder
from trident_local.text import Entity, pattern_entities

SNIPPET_CHARS = 600
NO_MODEL = {
    "caption": "no-model:detected-objects",
    "entities": "no-model:pattern-rules",
    "names": "no-model:top-terms",
}


@dataclass
class AnnotationResult:
    annotation: DocAnnotation
    concept_vecs: np.ndarray  # (rows, dim) for T and S concepts, row = Concept.vec_row
    field_vecs: np.ndarray  # (pages, len(FIELD_NAMES), dim)


def snippet(text: str) -> str:
    return " ".join(text.split())[:SNIPPET_CHARS]


def field_texts(rec: PageRecord) -> list[str]:
    """The text of each embedded field, in FIELD_NAMES order."""
    return [rec.visual, rec.section, "; ".join(e.text for e in rec.entities), rec.snippet]


def _merge_stats(a: CallStats, b: CallStats) -> dict:
    return a.merge(b).to_dict()


def annotate_document(
    doc: Document,
    *,
    embedder: TextEmbedder,
    chat: ChatModel | None = None,
    chat_name: str = "none",
    image_of: Callable[[int], Path] | None = None,
) -> AnnotationResult:
    """Annotate ``doc``; ``image_of(page)`` gives page PNGs to a chat model that sees images."""
    t0 = time.perf_counter()
    strategies = dict(NO_MODEL)
    page_calls, name_calls = CallStats(), CallStats()

    # -- per page: caption and entities -------------------------------------------------------------
    model_out = [None] * doc.n_pages
    if chat is not None:
        model_out, page_calls = annotate_pages(chat, doc, image_of)
        strategies["entities"] = f"model:{chat_name} (fallback no-model:pattern-rules)"
        if chat.supports_images and image_of is not None:
            strategies["caption"] = f"model:{chat_name} (fallback no-model:detected-objects)"
    all_entities: list[list[Entity]] = []
    captions: list[str] = []
    for page, out in zip(doc.pages, model_out, strict=True):
        all_entities.append(out.entities if out is not None else pattern_entities(page.text))
        captions.append(out.caption if out is not None and out.caption else object_caption(page))
    top = rank_entities(all_entities)
    records = [
        PageRecord(p.number, p.section, captions[i], top[i], snippet(p.text)) for i, p in enumerate(doc.pages)
    ]

    # -- concepts -----------------------------------------------------------------------------------
    size, stride = window_size(embedder.max_tokens)
    texts, pages = page_windows(doc, size, stride)
    topics = cluster_topics(texts, pages, embedder.encode(texts, kind="passage"))
    bundles = entity_bundles(all_entities, [p.number for p in doc.pages])
    sections = leaf_sections(doc)

    names_t = [" / ".join(t) or f"topic {i + 1}" for i, t in enumerate(topics.terms)]
    names_e = [" / ".join(b.members[:3]) for b in bundles]
    if chat is not None and (names_t or names_e):
        items = [
            NameItem("T", topics.terms[i], _context(doc, topics.weights[i])) for i in range(len(names_t))
        ]
        items += [NameItem("E", b.members, _context(doc, b.weights)) for b in bundles]
        named, name_calls = name_concepts(chat, items)
        names_t = [n or d for n, d in zip(named[: len(names_t)], names_t, strict=True)]
        names_e = [n or d for n, d in zip(named[len(names_t) :], names_e, strict=True)]
        strategies["names"] = f"model:{chat_name} (fallback no-model:top-terms)"

    concepts: list[Concept] = []
    for i, w in enumerate(topics.weights):
        concepts.append(Concept(f"T{i}", "T", names_t[i], w, topics.terms[i], vec_row=i))
    for i, b in enumerate(bundles):
        concepts.append(Concept(f"E{i}", "E", names_e[i], b.weights, b.members))
    n_t = len(topics.weights)
    for i, s in enumerate(sections):
        concepts.append(Concept(f"S{i}", "S", s.name, section_weights(s), s.path, vec_row=n_t + i))

    # -- vectors ------------------------------------------------------------------------------------
    s_vecs = embedder.encode([s.summary for s in sections], kind="passage")
    concept_vecs = np.concatenate(
        [topics.centroids.reshape(-1, embedder.dim), s_vecs.reshape(-1, embedder.dim)]
    )
    flat = [t for r in records for t in field_texts(r)]
    vecs = embedder.encode(flat, kind="passage").reshape(len(records), len(FIELD_NAMES), embedder.dim)
    empty = np.array([[not t.strip() for t in field_texts(r)] for r in records], dtype=bool).reshape(
        vecs.shape[:2]
    )
    vecs[empty] = 0.0  # an empty field matches nothing

    strategies["topics"] = f"embedder:{embedder.name}, MiniBatchKMeans, windows {size}w/{stride}w"
    strategies["sections"] = "leaf sections, extractive summary"
    stats = {
        "pages": doc.n_pages,
        "windows": topics.n_windows,
        "topics": n_t,
        "bundles": len(bundles),
        "sections": len(sections),
        "chat": _merge_stats(page_calls, name_calls),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    ann = DocAnnotation(doc.doc_id, records, concepts, strategies, stats, embedder=embedder.name)
    return AnnotationResult(ann, concept_vecs.astype(np.float32), vecs.astype(np.float32))


def _context(doc: Document, weights: dict[int, float]) -> str:
    """Opening text of the concept's heaviest page, as naming context."""
    if not weights:
        return ""
    page = max(weights, key=lambda p: (weights[p], -p))
    return " ".join(doc.page(page).text.split())[:400]
