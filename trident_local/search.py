"""The evidence pipeline: the one path from a question to ranked pages with their regions.

    from trident_local import Index, search
    pages = search(Index.open("idx"), "What was FY2019 capex?", k=5)
    pages[0].page, pages[0].found_by, pages[0].regions[0].bbox

Query -> pool (a member, or the fusion of several) -> lead-page finders -> regions. `trident search`,
`trident ask` (the pages its reranker and answer strategy read), the service's search, ask and
``/v1/chat/completions``, and `trident eval retrieval / qa / grounding` all call :func:`search`, so an
evaluation scores what a user is shown.

Lead-page finders are a registry: each reads the pool's pages and names the pages the question's
evidence is on by other means than word overlap (the filings reader: the rows its line items are read
from). Their pages go first, scored as the pool's best page, each with the regions the finder read. A
finder is switched off by leaving its name out of ``finders``.

The pool is always read ``index.config.pool_size`` pages deep (the ask's candidate pool, M = 20 by
default), whatever ``k``: the finders see the same pages for a 5-page search and a 20-page ask, so
``search(k=5)`` is the head of the ask's pages.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from trident_local.errors import TridentError
from trident_local.lazy_registry import LazyRegistry
from trident_local.query import Query
from trident_local.regions.attach import search_regions
from trident_local.regions.layout import Region
from trident_local.retrieve.base import Hit

if TYPE_CHECKING:
    from trident_local.index import Index

log = logging.getLogger(__name__)


@dataclass
class Lead:
    """A page a finder names as the question's evidence, with the regions it read there."""

    doc_id: str
    page: int
    regions: list[Region] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, int]:
        return (self.doc_id, self.page)


class LeadFinder(Protocol):
    """Names the pages that carry a question's evidence, given the pool's pages (best first);
    returns [] for a question it has nothing to say about."""

    name: ClassVar[str]

    def find(self, index: Index, query: Query, hits: Sequence[Hit]) -> list[Lead]: ...


_FINDERS = LazyRegistry("lead-page finder", "lead-page finders", {
    "line-items": "trident_local.generate.statement_search:LineItemFinder",
})


def finder_names() -> list[str]:
    return _FINDERS.names()


def register_finder(name: str, target: str) -> None:
    """Add a lead-page finder as a lazy ``"module:Class"`` target; it runs by default."""
    _FINDERS.register(name, target)


def parse_finders(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """The finder names a CLI/API/service option asks for: None or "all" every registered finder,
    "none" or "" no finder, else a comma list (or sequence) of registered names, checked here."""
    if spec is None or spec == "all":
        return tuple(finder_names())
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if names == ["none"]:
        return ()
    unknown = [n for n in names if n not in _FINDERS]
    if unknown:
        raise TridentError(f"unknown lead-page finder {unknown[0]!r}; finders: "
                           f"{', '.join(finder_names()) or '(none)'}, or 'all' / 'none'")
    return tuple(dict.fromkeys(names))


@dataclass
class PageHit:
    """A ranked page: its score, what found it (a pool, or a finder's name) and its regions, best first."""

    doc_id: str
    page: int
    score: float
    found_by: str
    regions: list[Region] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, int]:
        return (self.doc_id, self.page)

    @property
    def hit(self) -> Hit:
        return Hit(self.doc_id, self.page, self.score, self.found_by)

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "page": self.page, "score": self.score, "found_by": self.found_by,
                "regions": [r.to_dict() for r in self.regions]}


def search(
    index: Index,
    question: str | Query,
    *,
    pool: str = "fused",
    doc: str | Sequence[str] | None = None,
    k: int = 5,
    finders: str | Sequence[str] | None = None,
    regions: bool = True,
) -> list[PageHit]:
    """The top ``k`` evidence pages for ``question``, within ``doc`` if given.

    ``finders``: the lead-page finders to run (None: all registered; see :func:`parse_finders`);
    ``regions``: attach each page's best-matching rows or lines (False for callers that only need the
    pages, such as the ask's candidate pool). Reads only: never writes the index.
    """
    if k < 1:
        raise TridentError(f"k must be at least 1, not {k}")
    query = Query.of(question)
    names = parse_finders(finders)
    hits = index.search(query, pool=pool, doc=doc, k=max(k, index.config.pool_size))
    if not hits:
        return []
    docs = None if doc is None else {index.resolve(d) for d in ([doc] if isinstance(doc, str) else doc)}
    leads: dict[tuple[str, int], PageHit] = {}
    for name in names:
        for lead in _leads(index, name, query, hits, docs):
            found = leads.setdefault(lead.key, PageHit(*lead.key, hits[0].score, name))
            found.regions.extend(lead.regions)
    ranked = [*leads.values(), *(PageHit(h.doc_id, h.page, h.score, h.pool) for h in hits if h.key not in leads)]
    ranked = ranked[:k]
    if regions:
        for page, rows in zip(ranked, search_regions(index, query, [p.hit for p in ranked]), strict=True):
            boxes: dict[tuple[float, ...], Region] = {}  # two operands may share a row label
            for r in [*page.regions, *rows]:
                boxes.setdefault(tuple(round(v, 1) for v in r.bbox), r)
            page.regions = list(boxes.values())
    return ranked


def _leads(index: Index, name: str, query: Query, hits: list[Hit], docs: set[str] | None) -> list[Lead]:
    """A finder's leads within the documents searched and their pages; a finder that fails is logged and
    skipped (the pool's ranking stands), so one broken finder never takes search down."""
    try:
        found = _FINDERS.load(name)().find(index, query, hits)
    except TridentError:
        raise
    except Exception as e:  # a finder is code over arbitrary documents: report it, keep searching
        log.warning("lead-page finder %r failed on %r (%s: %s); its pages are left out", name, query.text[:80],
                    type(e).__name__, e)
        return []
    entries = index.store.manifest.documents
    return [lead for lead in found if (docs is None or lead.doc_id in docs) and lead.doc_id in entries
            and 1 <= lead.page <= entries[lead.doc_id].n_pages]
