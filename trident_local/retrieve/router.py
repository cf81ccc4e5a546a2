"""Query router for the xKG pool: a query class and the query's entities.

Classes: topical (what is said about a subject), entity-level (a named thing,
a number, a date), structural (a section, a page, a position in the document),
mixed. The model route asks the chat model for JSON; the rule-based route
(the no-model strategy, also the fallback when the model's reply is unusable)
reads cue words and pattern entities.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trident_local.annotate.entities import pattern_entities
from trident_local.errors import ModelOutputError
from trident_local.models.protocols import ChatModel, ChatRequest, Message
from trident_local.models.structured import parse_json_text, reply_params
from trident_local.text import ENTITY_CUES, STRUCTURAL_CUES

QUERY_CLASSES = ("topical", "entity-level", "structural", "mixed")
RULES = "no-model:cue-rules"

# alpha(class) per axis (T topic, E entity, S structure).
ALPHA: dict[str, dict[str, float]] = {
    "topical": {"T": 1.0, "E": 0.2, "S": 0.4},
    "entity-level": {"T": 0.4, "E": 1.0, "S": 0.2},
    "structural": {"T": 0.4, "E": 0.2, "S": 1.0},
    "mixed": {"T": 0.7, "E": 0.7, "S": 0.7},
}

_QUOTED = re.compile(r"[\"“”']([^\"“”']{2,60})[\"“”']")

SCHEMA = {
    "type": "object",
    "properties": {
        "query_class": {"type": "string", "enum": list(QUERY_CLASSES)},
        # bounded, so a constrained reply has a largest length (and max_tokens is sized from it)
        "entities": {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 8},
    },
    "required": ["query_class", "entities"],
}
INSTRUCTIONS = (
    "Classify a question about a long document for a page retriever. query_class: 'topical' (about a "
    "subject or "
    "theme), 'entity-level' (asks about a specific named thing, number, date, amount), 'structural' "
    "(refers to a "
    "section, page, chapter, slide or position in the document), or 'mixed'. entities: the names, numbers, "
    "dates "
    'and quoted phrases in the question, copied exactly. Return {"query_class": ..., "entities": [...]} only.'
)


@dataclass
class Route:
    query_class: str
    entities: list[str] = field(default_factory=list)
    source: str = RULES  # "model:<name>" or the rule name
    error: str | None = None  # why the model route fell back to rules

    @property
    def alpha(self) -> dict[str, float]:
        return ALPHA[self.query_class]


def query_entities(question: str) -> list[str]:
    """Pattern entities and quoted phrases of the question, de-duplicated in order."""
    found = [e.text for e in pattern_entities(question)] + [
        m.group(1).strip() for m in _QUOTED.finditer(question)
    ]
    seen, out = set(), []
    for e in found:
        k = e.lower()
        if k not in seen:
            seen.add(k)
            out.append(e)
    return out


def rule_route(question: str) -> Route:
    ents = query_entities(question)
    structural = bool(STRUCTURAL_CUES.search(question))
    entity = bool(ents) or bool(ENTITY_CUES.search(question))
    cls = (
        "mixed"
        if structural and entity
        else "structural"
        if structural
        else "entity-level"
        if entity
        else "topical"
    )
    return Route(cls, ents)


def route_request(question: str) -> ChatRequest:
    return ChatRequest(
        messages=[Message("system", INSTRUCTIONS), Message("user", f"Question: {question}")],
        params=reply_params(SCHEMA),
        json_schema=SCHEMA,
        tag="route",
    )


def parse_route(text: str) -> Route:
    value, _ = parse_json_text(text)
    if not isinstance(value, dict) or value.get("query_class") not in QUERY_CLASSES:
        raise ModelOutputError(f"query_class must be one of {QUERY_CLASSES}")
    ents = value.get("entities", [])
    if not isinstance(ents, list):
        raise ModelOutputError("entities is not a list")
    return Route(
        value["query_class"],
        [" ".join(e.split())[:80] for e in ents if isinstance(e, str) and e.strip()][:20],
    )


def route(question: str, chat: ChatModel | None = None) -> Route:
    """Model route when a chat model is given, rule route otherwise or when the reply is unusable."""
    if chat is None:
        return rule_route(question)
    res = chat.chat([route_request(question)])[0]
    if res.error:
        r = rule_route(question)
        r.error = f"model call failed: {res.error}"
        return r
    try:
        r = parse_route(res.text)
    except ModelOutputError as e:
        r = rule_route(question)
        r.error = f"unusable model output: {e}"
        return r
    r.source = f"model:{chat.name}"
    return r
