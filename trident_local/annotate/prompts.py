"""Prompts and output schemas of the annotation calls (page caption + entities; concept names).

Fixed instructions come first and page content last, so a backend with prefix
caching reuses the instruction blocks across the pages of a batch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

from trident_local.text import ENTITY_TYPES

PAGE_TEXT_CHARS = 2500

PAGE_SYSTEM = (
    "You annotate one page of a long document so that a search system can later decide whether the page "
    "answers a question. Reply with one JSON object and nothing else."
)

CAPTION_RULES = (
    '"caption": at most 60 words describing what is VISIBLE on the page: tables (what they tabulate), charts '
    "(type, axes, series), figures, photos, maps, diagrams, and the layout (slide, form, two-column text). "
    "Do not summarize the running text."
)

ENTITY_RULES = (
    '"entities": up to 25 items {"text", "type"} copied from the page, type one of: '
    "name (people, organizations, places, products, programs), number, date (years, dates, periods), money, "
    "percent, ref (references such as 'Table 2', 'Figure 3', 'Section 4.1'). Prefer what a question could "
    "ask about."
)


ENTITY_CHARS = 60


class PageEntity(BaseModel):
    text: str = Field(min_length=1, max_length=ENTITY_CHARS)
    type: Literal[ENTITY_TYPES]  # type: ignore[valid-type]


MAX_PAGE_ENTITIES = 25


class PageEntities(BaseModel):
    """A page's entities. Items that are not valid entities are dropped (a safe, counted repair)."""

    entities: list[PageEntity] = Field(max_length=MAX_PAGE_ENTITIES)

    @field_validator("entities", mode="before")
    @classmethod
    def _drop_bad_items(cls, v: Any, info: ValidationInfo) -> Any:
        if not isinstance(v, list):
            return v
        kept = []
        for item in v:
            try:
                kept.append(PageEntity.model_validate(item))
            except ValidationError:
                continue
        if len(kept) < len(v) and isinstance(info.context, dict):
            info.context.setdefault("repairs", []).append("dropped-entity")
        return kept


CAPTION_CHARS = 500


class CaptionedPage(PageEntities):
    caption: str = Field(max_length=CAPTION_CHARS)


def page_schema(with_caption: bool) -> type[PageEntities]:
    """The reply model of a page call (its JSON Schema is what constrained decoding gets)."""
    return CaptionedPage if with_caption else PageEntities


def page_instructions(with_caption: bool) -> str:
    keys = '{"caption": ..., "entities": [...]}' if with_caption else '{"entities": [...]}'
    rules = [CAPTION_RULES, ENTITY_RULES] if with_caption else [ENTITY_RULES]
    return f"Return {keys}.\n- " + "\n- ".join(rules)


def page_content(number: int, section: str, text: str, objects: list[str]) -> str:
    parts = [f"Page {number}."]
    if section:
        parts.append(f"Section: {section}")
    if objects:
        parts.append("Detected objects: " + "; ".join(objects))
    parts.append("Page text:\n" + (text[:PAGE_TEXT_CHARS] or "(no text layer)"))
    return "\n".join(parts)


NAME_SYSTEM = "You name groups of related content in a document. Reply with one JSON object and nothing else."

NAME_INSTRUCTIONS = (
    "Give the group a short name (2 to 6 words) that a reader would use to refer to it. "
    'Return {"name": "..."}.'
)

class ConceptName(BaseModel):
    name: str = Field(min_length=1, max_length=60)

KIND_WORDS = {"T": "a topic (frequent terms)", "E": "a bundle of entities that occur together"}


def name_content(kind: str, members: list[str], context: str) -> str:
    return f"The group is {KIND_WORDS[kind]}: {', '.join(members[:15])}.\nExample text: {context[:400]}"
