"""Field switches of the candidate records, for the paper's ablations.

``page_id`` and ``retriever_score`` are always in a record; a switch picks which
of the annotated fields go with them.
"""

from __future__ import annotations

from trident_local.errors import TridentError

ANNOTATED = ("concept_hits", "section", "visual", "entities", "text")

FIELD_SETS: dict[str, tuple[str, ...]] = {
    "full": ANNOTATED,
    "caption-only": ("visual",),
    "drop-caption": tuple(f for f in ANNOTATED if f != "visual"),
    "drop-concepts": tuple(f for f in ANNOTATED if f != "concept_hits"),
    "drop-entities": tuple(f for f in ANNOTATED if f != "entities"),
    "snippet-only": ("text",),
}


def field_set(name: str) -> tuple[str, ...]:
    if name not in FIELD_SETS:
        raise TridentError(f"unknown field switch {name!r}; choose one of {', '.join(FIELD_SETS)}")
    return FIELD_SETS[name]
