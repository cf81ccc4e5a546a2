"""Page search that reads the statements: a question that names line items finds the pages they are on.

A question that defines a metric, names a standard one or asks for one line item (FinanceBench's "What
is FY2018 days payable outstanding for Walmart? DPO is defined as ...") is answered from the table rows
of those items (:func:`.evidence_answer.defined_metric`: a search per item name, then the rows of the
pages that print it). Those rows' pages are the question's evidence, but a page search for the whole
question ranks pages by all its words, which the MD&A and the notes share more often than the statements
do. So :func:`search_pages` ranks the pages the items were read from first, each with the value's cell and
its row label as its first regions, then the pool's other hits; any other question gets the pool's
ranking unchanged. `trident search`, the service's search and `trident eval grounding` use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from trident_local.generate.evidence_answer import defined_metric
from trident_local.query import Query
from trident_local.regions.attach import search_regions
from trident_local.retrieve.base import Hit

if TYPE_CHECKING:
    from trident_local.index import Index

POOL = "line-items"  # the pool name a page found by its line items carries


@dataclass
class PageHit:
    """A ranked page and its regions (dicts: page, bbox, kind, text), best first."""

    hit: Hit
    regions: list[dict] = field(default_factory=list)


def search_pages(index: Index, question: str, *, pool: str = "fused", doc: str | Sequence[str] | None = None,
                 k: int = 5) -> list[PageHit]:
    """The top ``k`` pages for ``question`` with their regions: the pages of the line items it names
    first (scored as the pool's best hit), then the pool's ranking."""
    query = Query.of(question)  # the pool's query vector, reused to rank the rows
    hits = index.search(query, pool=pool, doc=doc, k=k)
    if not hits:
        return []
    metric = defined_metric(index, question, hits)
    items: dict[tuple[str, int], list[dict]] = {}
    for o in metric.operands if metric is not None else []:
        items.setdefault((o.doc_id, o.page), []).extend(o.regions())
    pooled = {h.key: h for h in hits}
    lead = [replace(pooled[key], score=hits[0].score) if key in pooled else Hit(*key, hits[0].score, POOL)
            for key in items]
    ranked = (lead + [h for h in hits if h.key not in items])[:k]
    out = []
    for h, rows in zip(ranked, search_regions(index, query, ranked), strict=True):
        regions: dict[tuple, dict] = {}  # by box: two operands share a row label, a row may be both
        for r in [*items.get(h.key, []), *(r.to_dict() for r in rows)]:
            regions.setdefault(tuple(r["bbox"]), r)
        out.append(PageHit(h, list(regions.values())))
    return out
