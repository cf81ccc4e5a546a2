"""Topic concepts: page text windows, embedded, clustered with MiniBatchKMeans.

Windows are at most 512 tokens with a stride of half a window, and never longer
than the embedder reads (all-MiniLM truncates at 256 word pieces, so there a
window is 196 words): what the embedder cannot see should not decide a cluster.
K = min(64, windows / 8). A page's weight in a topic is the share of the
topic's windows that lie on that page.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from trident_local.docs.model import Document
from trident_local.text import term_pairs, top_terms
from trident_local.windows import windows

MAX_WINDOW_TOKENS = 512
WORDS_PER_TOKEN = 1 / 1.3  # English text: about 1.3 word pieces per word
MAX_TOPICS = 64
WINDOWS_PER_TOPIC = 8


@dataclass
class TopicClusters:
    """Clustered windows of one document."""

    centroids: np.ndarray  # (K, dim), L2-normalized
    weights: list[dict[int, float]]  # per topic: page -> share of its windows
    terms: list[list[str]]  # per topic: top surface terms
    n_windows: int


def window_size(max_tokens: int) -> tuple[int, int]:
    """(words per window, stride in words) for an embedder that reads ``max_tokens``."""
    size = max(16, int(min(MAX_WINDOW_TOKENS, max_tokens) * WORDS_PER_TOKEN))
    return size, max(8, size // 2)


def page_windows(doc: Document, size: int, stride: int) -> tuple[list[str], list[int]]:
    texts, pages = [], []
    for p in doc.pages:
        for w in windows(p.text, size, stride):
            texts.append(w)
            pages.append(p.number)
    return texts, pages


def n_topics(n_windows: int) -> int:
    return max(1, min(MAX_TOPICS, n_windows // WINDOWS_PER_TOPIC)) if n_windows else 0


def cluster_topics(texts: list[str], pages: list[int], vecs: np.ndarray, seed: int = 0) -> TopicClusters:
    """MiniBatchKMeans over window vectors; deterministic for a seed."""
    k = n_topics(len(texts))
    dim = vecs.shape[1] if vecs.ndim == 2 else 0
    if k == 0:
        return TopicClusters(np.zeros((0, dim), np.float32), [], [], 0)
    if k == 1:
        labels = np.zeros(len(texts), dtype=int)
        centroids = vecs.mean(axis=0, keepdims=True)
    else:
        from sklearn.cluster import MiniBatchKMeans

        km = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=256)
        labels = km.fit_predict(vecs)
        centroids = km.cluster_centers_
    centroids = centroids / np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    weights: list[dict[int, float]] = []
    groups: list[list[str]] = []
    surface: Counter[tuple[str, str]] = Counter()
    for c in range(centroids.shape[0]):
        idx = np.flatnonzero(labels == c)
        counts = Counter(pages[i] for i in idx)
        weights.append({p: n / len(idx) for p, n in sorted(counts.items())} if len(idx) else {})
        pairs = [tp for i in idx for tp in term_pairs(texts[i])]
        surface.update(pairs)
        groups.append([t for t, _ in pairs])
    best_surface: dict[str, str] = {}
    for (stem, word), _ in surface.most_common():
        best_surface.setdefault(stem, word)
    names = [[best_surface.get(t, t) for t in ts] for ts in top_terms(groups, n=3)]
    return TopicClusters(centroids.astype(np.float32), weights, names, len(texts))
