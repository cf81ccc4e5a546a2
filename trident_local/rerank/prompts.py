"""Prompt and output schema of the single rerank call.

Structure follows the paper (instructions, question, JSON list of candidate
records; JSON out with a short rationale and the ordered page list); the
wording is ours. The schema's ``enum`` lists the pool's page ids, so a backend
with constrained decoding cannot name a page outside the pool.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

SYSTEM = (
    "You select the pages of a long document that hold the evidence for a question. You see one JSON record "
    "per candidate page: page_id, retriever_score (higher = the retriever liked it more), and some of: "
    "concept_hits (document concepts the question matches on this page; T = topic, E = entity bundle, "
    "S = section), section (where the page sits), visual (what is visible on the page: tables, charts, "
    "figures, "
    "layout), entities (names, numbers, dates, amounts on the page), text (the start of the page text)."
)

RULES = (
    'Return JSON {{"thinking": "<one or two sentences>", "page_list": [page_id, ...]}}: at most {k} page '
    "ids, "
    "strongest evidence first, only ids from the records. Choose as few pages as answer the question; a "
    "chart or "
    "table question usually needs the one page that shows it. Never invent ids."
)


THINKING_CHARS = 400


def schema(page_ids: Sequence[str], k_max: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "thinking": {"type": "string", "maxLength": THINKING_CHARS},
            "page_list": {
                "type": "array",
                "items": {"type": "string", "enum": list(page_ids)},
                "minItems": 1,  # the reply must name a page: an empty list is not a ranking
                "maxItems": k_max,
            },
        },
        "required": ["thinking", "page_list"],
    }


def user_message(question: str, records: Sequence[dict[str, Any]], k_max: int) -> str:
    return f"{RULES.format(k=k_max)}\n\nQuestion: {question}\n\nCandidate records:\n" + json.dumps(
        list(records), ensure_ascii=False
    )
