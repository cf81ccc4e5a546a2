"""Query router for the xKG pool: a query class and the query's entities.

Classes: topical (what is said about a subject), entity-level (a named thing,
a number, a date), structural (a section, a page, a position in the document),
mixed. The model route asks the chat model for JSON; the rule-based route
(the no-model strategy, also the fallback when the model's reply is unusable)
reads cue words and pattern entities.
"""

from __future__ import annotations

from trident_local.errors import ModelOutputError
from trident_local.models.protocols import ChatModel, ChatRequest
from trident_local.models.structured import parse_json_text, schema_request
from trident_local.query import QUERY_CLASSES, Route
from trident_local.text import ENTITY_CUES, STRUCTURAL_CUES, query_entities

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
    return schema_request(INSTRUCTIONS, f"Question: {question}", SCHEMA, "route")


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
