"""The "auto" reranker, the default of `ask`, the API and the service: the annotated rerank where it is
known to help, else the pool's own order, with the reason in the result.

- The candidates' documents lack the annotation stage (`trident index` without ``--annotate``):
  the pool order; the annotated rerank has no records to read.
- A chat model is loaded: the annotated rerank, one model call (the GPU path).
- No chat model: the no-model fused match only where :data:`NO_MODEL_RERANK` says it held on both
  development distributions (never below the pool's Recall@5 and MRR); otherwise the pool order.

Choosing per ask from the candidates keeps one rule for every caller instead of each edge deciding
for itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel
    from trident_local.query import Query
    from trident_local.rerank.records import RerankResult
    from trident_local.retrieve.base import Hit

# Off: fitted on MMLongBench-Doc's calib half, the no-model rerank raised Recall@5 and MRR there and on
# FinanceBench's development split, and lowered both on MMLongBench-Doc's test half at every gate margin
# (docs/INDEX.md#the-rerank-by-default). `--rerank annotated` still runs it.
NO_MODEL_RERANK = False

NOT_ANNOTATED = "the documents have no annotation (`trident annotate` adds it): pool order"
NO_MODEL_OFF = ("no chat model: the pool order (the no-model rerank did not hold on every development set; "
                "--rerank annotated runs it)")


def auto_choice(index: Index, doc_ids: set[str], chat: ChatModel | None = None) -> tuple[str, str]:
    """("annotated", "") where the annotated rerank runs for these candidates, else ("none", why)."""
    from trident_local.annotate.cache import STAGE

    entries = index.store.manifest.documents
    annotated = bool(doc_ids) and all(entries[d].stages.get(STAGE) for d in doc_ids if d in entries)
    if not annotated:
        return "none", NOT_ANNOTATED
    if chat is None and not NO_MODEL_RERANK:
        return "none", NO_MODEL_OFF
    return "annotated", ""


class AutoReranker:
    name: ClassVar[str] = "auto"
    needs_model: ClassVar[bool] = False  # the reranker it picks brings its own no-model stand-in
    no_model: ClassVar[str | None] = None

    def rerank(
        self, index: Index, query: Query, hits: Sequence[Hit], *, chat: ChatModel | None, fields: str, k_max: int
    ) -> RerankResult:
        from trident_local.rerank.base import get_reranker

        choice, why = auto_choice(index, {h.doc_id for h in hits}, chat)
        res = get_reranker(choice, chat).rerank(index, query, hits, chat=chat, fields=fields, k_max=k_max)
        res.note = why
        return res
