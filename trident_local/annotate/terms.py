"""Content terms of a text: lower-cased, stop words out, Snowball-stemmed.

One tokenizer shared by concept naming, the lexical channel of the no-model
reranker and the extractive answerer, so that all of them agree on what a
"matching word" is.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]|\d+(?:[.,]\d+)*%?")
_EXTRA_STOP = {
    "according",
    "report",
    "document",
    "page",
    "pages",
    "does",
    "did",
    "shown",
    "show",
    "shows",
    "using",
    "used",
    "use",
    "based",
    "also",
    "many",
    "much",
    "percentage",
    "number",
    "total",
}
STOP_WORDS = frozenset(ENGLISH_STOP_WORDS | _EXTRA_STOP)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def words(text: str) -> list[str]:
    """Surface words (original case) in order."""
    return _WORD.findall(text)


def term_pairs(text: str) -> list[tuple[str, str]]:
    """(stemmed term, surface word) for each content word, in order."""
    kept = []
    for w in words(text):
        lw = w.lower()
        if lw in STOP_WORDS or (len(lw) < 2 and not lw.isdigit()):
            continue
        kept.append((lw.replace(",", "") if lw[0].isdigit() else lw, w))
    alpha = [t for t, _ in kept if not t[0].isdigit()]
    stems = iter(_stemmer().stemWords(alpha)) if alpha else iter(())
    return [(t if t[0].isdigit() else next(stems), w) for t, w in kept]


def terms(text: str) -> list[str]:
    """Stemmed content terms in order (numbers kept as written, minus thousands separators)."""
    return [t for t, _ in term_pairs(text)]


def idf_table(docs: Sequence[Iterable[str]]) -> dict[str, float]:
    """Smoothed IDF, log(1 + N / df), over term collections."""
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    n = max(len(docs), 1)
    return {t: math.log(1.0 + n / c) for t, c in df.items()}


def weighted_overlap(
    query: Sequence[str], text_terms: Iterable[str], idf: dict[str, float], default_idf: float
) -> float:
    """Share of the query's IDF mass whose terms occur in the text (0..1)."""
    q = set(query)
    if not q:
        return 0.0
    have = set(text_terms)
    total = sum(idf.get(t, default_idf) for t in q)
    return sum(idf.get(t, default_idf) for t in q if t in have) / total if total else 0.0


def top_terms(groups: Sequence[Sequence[str]], n: int = 3) -> list[list[str]]:
    """Most distinctive terms per group (class-based TF-IDF: frequency in the group x log(1 + groups/df))."""
    idf = idf_table(groups)
    out = []
    for g in groups:
        tf = Counter(t for t in g if not t[0].isdigit() and len(t) > 2)
        ranked = sorted(tf, key=lambda t: (-tf[t] * idf.get(t, 0.0), t))
        out.append(ranked[:n])
    return out
