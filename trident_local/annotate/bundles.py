"""Entity concepts: bundles of co-occurring entities, found by density-based clustering.

The co-occurrence graph joins entities that appear on the same pages; an
entity's neighbourhood is its page-incidence vector, and DBSCAN over cosine
distance between those vectors groups entities that keep turning up together
(min_samples = 2, so every bundle has at least two entities). Entities on more
than half of a document's pages (running headers, the company name) say nothing
about any one page and are left out. A page's weight in a bundle is the share of
the bundle's entities found on that page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trident_local.annotate.entities import normalize
from trident_local.text import Entity

MAX_ENTITIES = 2000  # per document; the most frequent are kept
MAX_PAGE_SHARE = 0.5
EPS = 0.35  # cosine distance between page-incidence vectors
MAX_BUNDLE = 200  # members kept per bundle (weights use all of them)


@dataclass
class Bundle:
    members: list[str]  # surface forms, most frequent first
    weights: dict[int, float]


def entity_bundles(page_entities: Sequence[Sequence[Entity]], page_numbers: Sequence[int]) -> list[Bundle]:
    """Bundles (size >= 2) from the entities of each page; ``page_numbers`` aligns with ``page_entities``."""
    n_pages = len(page_numbers)
    pages_of: dict[str, set[int]] = {}
    surface: dict[str, str] = {}
    for number, ents in zip(page_numbers, page_entities, strict=True):
        for e in ents:
            key = normalize(e.text)
            if len(key) < 2:
                continue
            pages_of.setdefault(key, set()).add(number)
            surface.setdefault(key, e.text)
    limit = max(2, int(MAX_PAGE_SHARE * n_pages)) if n_pages > 4 else n_pages
    keys = [k for k in pages_of if len(pages_of[k]) <= limit]
    keys.sort(key=lambda k: (-len(pages_of[k]), k))
    keys = keys[:MAX_ENTITIES]
    if len(keys) < 2:
        return []
    col = {p: i for i, p in enumerate(page_numbers)}
    x = np.zeros((len(keys), n_pages), dtype=np.float32)
    for r, k in enumerate(keys):
        x[r, [col[p] for p in pages_of[k]]] = 1.0
    from sklearn.cluster import DBSCAN

    labels = DBSCAN(eps=EPS, min_samples=2, metric="cosine", algorithm="brute").fit_predict(x)
    bundles = []
    for label in sorted(set(labels.tolist()) - {-1}):
        members = [keys[i] for i in np.flatnonzero(labels == label)]
        if len(members) < 2:
            continue
        counts: dict[int, int] = {}
        for m in members:
            for p in pages_of[m]:
                counts[p] = counts.get(p, 0) + 1
        members.sort(key=lambda k: (-len(pages_of[k]), k))
        weights = {p: c / len(members) for p, c in sorted(counts.items())}
        bundles.append(Bundle([surface[m] for m in members][:MAX_BUNDLE], weights))
    return bundles
