"""Entity salience ranking and loose matching; the pattern rules that find typed entities (the
no-model strategy) are :func:`trident_local.text.pattern_entities`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from trident_local.text import Entity

TOP_ENTITIES = 15


def normalize(text: str) -> str:
    """Lower-case, whitespace collapsed, surrounding punctuation and thousands separators removed."""
    t = " ".join(text.lower().split()).strip(" .,;:()[]\"'")
    return re.sub(r"(?<=\d),(?=\d{3})", "", t)


def rank_entities(per_page: Sequence[Sequence[Entity]], top: int = TOP_ENTITIES) -> list[list[Entity]]:
    """Per page, the ``top`` entities by salience: count on the page x log(1 + pages / pages-with-it)."""
    df: Counter[str] = Counter()
    for ents in per_page:
        df.update({normalize(e.text) for e in ents})
    n = max(len(per_page), 1)
    out = []
    for ents in per_page:
        counts = Counter(normalize(e.text) for e in ents)
        first: dict[str, Entity] = {}
        for e in ents:
            first.setdefault(normalize(e.text), e)
        ranked = sorted(first, key=lambda k: (-counts[k] * math.log(1.0 + n / df[k]), list(first).index(k)))
        out.append([first[k] for k in ranked[:top]])
    return out


def loose_match(a: str, b: str) -> bool:
    """Loose substring match of normalized forms (either contains the other; short strings need equality)."""
    x, y = normalize(a), normalize(b)
    if not x or not y:
        return False
    if min(len(x), len(y)) < 3:
        return x == y
    return x in y or y in x


def overlap_score(query_entities: Iterable[str], members: Sequence[str]) -> float:
    """Share of a bundle's entities that loosely match some query entity (0..1)."""
    q = [e for e in query_entities if normalize(e)]
    if not q or not members:
        return 0.0
    return sum(any(loose_match(m, e) for e in q) for m in members) / len(members)
