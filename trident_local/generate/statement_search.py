"""The filings reader as a lead-page finder: a question that names line items finds the pages they are on.

A question that defines a metric, names a standard one or asks for one line item (FinanceBench's "What
is FY2018 days payable outstanding for Walmart? DPO is defined as ...") is answered from the table rows
of those items (:func:`.evidence_answer.defined_metric`: a search per item name, then the rows of the
pages that print it). Those rows' pages are the question's evidence, but a page search for the whole
question ranks pages by all its words, which the MD&A and the notes share more often than the statements
do. Registered in :mod:`trident_local.search` as the ``line-items`` finder: the pages the items were read
from go first, each with the value's cell and its row label as its first regions; any other question
gets no lead pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from trident_local.generate.evidence_answer import defined_metric
from trident_local.query import Query
from trident_local.retrieve.base import Hit
from trident_local.search import Lead

if TYPE_CHECKING:
    from trident_local.index import Index


class LineItemFinder:
    name: ClassVar[str] = "line-items"

    def find(self, index: Index, query: Query, hits: Sequence[Hit]) -> list[Lead]:
        metric = defined_metric(index, query.text, hits)
        leads: dict[tuple[str, int], Lead] = {}
        for o in metric.operands if metric is not None else []:
            leads.setdefault((o.doc_id, o.page), Lead(o.doc_id, o.page)).regions.extend(o.regions())
        return list(leads.values())
