"""The model strategies of annotation: one batched chat call for all pages, one for all concept names.

Model output is untrusted: each reply is parsed and checked; a reply that fails
(backend error, no JSON, wrong shape) yields None for that item, the caller
falls back to the no-model strategy for it, and the failure is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trident_local.annotate import prompts
from trident_local.annotate.captions import cut_words
from trident_local.annotate.entities import ENTITY_TYPES
from trident_local.annotate.records import Entity
from trident_local.docs.model import Document, Page
from trident_local.errors import ModelOutputError
from trident_local.models.json_output import parse_json, schema_errors
from trident_local.models.protocols import ChatModel, ChatRequest, ImagePart, Message, SamplingParams

MAX_MODEL_ENTITIES = 40
MAX_NAME_WORDS = 6
PAGE_MAX_TOKENS = 400
NAME_MAX_TOKENS = 32


@dataclass
class PageModelOutput:
    caption: str | None  # None when the call did not ask for one (text-only model)
    entities: list[Entity]


@dataclass
class CallStats:
    requests: int = 0
    failed: int = 0  # backend errors
    unparsable: int = 0  # no JSON / wrong shape
    errors: list[str] = field(default_factory=list)  # first few messages, for the user

    def note(self, msg: str) -> None:
        if len(self.errors) < 5:
            self.errors.append(msg[:200])


def _objects(page: Page) -> list[str]:
    return [
        f"{o.label or o.type}" + (f" ({o.caption[:80]})" if o.caption else "")
        for o in page.objects
        if o.type in ("table", "figure", "equation")
    ]


def page_request(page: Page, image: Path | None, with_caption: bool) -> ChatRequest:
    content: list[str | ImagePart] = [prompts.page_instructions(with_caption)]
    if image is not None:
        content.append(ImagePart(path=str(image)))
    content.append(prompts.page_content(page.number, page.section, page.text, _objects(page)))
    return ChatRequest(
        messages=[Message("system", prompts.PAGE_SYSTEM), Message("user", content)],
        params=SamplingParams(max_tokens=PAGE_MAX_TOKENS),
        json_schema=prompts.page_schema(with_caption),
        tag=f"annotate-page:{page.number}",
    )


def parse_page_output(text: str, with_caption: bool) -> PageModelOutput:
    """Strict parse with safe repair: unknown entity types and empty or over-long items are dropped."""
    value = parse_json(text)
    errs = schema_errors(
        value, {"type": "object", "required": ["caption", "entities"] if with_caption else ["entities"]}
    )
    if errs:
        raise ModelOutputError("; ".join(errs))
    raw = value.get("entities")
    if not isinstance(raw, list):
        raise ModelOutputError("entities is not a list")
    ents: list[Entity] = []
    for item in raw[: MAX_MODEL_ENTITIES * 2]:
        if not isinstance(item, dict):
            continue
        t, ty = item.get("text"), item.get("type")
        if isinstance(t, str) and isinstance(ty, str) and ty in ENTITY_TYPES and 0 < len(t.strip()) <= 80:
            ents.append(Entity(" ".join(t.split()), ty))
    caption = None
    if with_caption:
        cap = value.get("caption")
        if not isinstance(cap, str):
            raise ModelOutputError("caption is not a string")
        caption = cut_words(cap)
    return PageModelOutput(caption, ents[:MAX_MODEL_ENTITIES])


def annotate_pages(
    chat: ChatModel, doc: Document, image_of: Callable[[int], Path] | None
) -> tuple[list[PageModelOutput | None], CallStats]:
    """Caption (when the model sees images) and entities for every page, in ONE batch."""
    with_caption = bool(chat.supports_images and image_of is not None)
    reqs = [
        page_request(p, image_of(p.number) if with_caption and image_of else None, with_caption)
        for p in doc.pages
    ]
    stats = CallStats(requests=len(reqs))
    results = chat.chat(reqs) if reqs else []
    out: list[PageModelOutput | None] = []
    for page, res in zip(doc.pages, results, strict=True):
        if res.error:
            stats.failed += 1
            stats.note(f"page {page.number}: {res.error}")
            out.append(None)
            continue
        try:
            out.append(parse_page_output(res.text, with_caption))
        except ModelOutputError as e:
            stats.unparsable += 1
            stats.note(f"page {page.number}: {e}")
            out.append(None)
    return out, stats


@dataclass
class NameItem:
    kind: str  # "T" or "E"
    members: list[str]
    context: str


def name_request(item: NameItem, i: int) -> ChatRequest:
    return ChatRequest(
        messages=[
            Message("system", prompts.NAME_SYSTEM),
            Message(
                "user",
                prompts.NAME_INSTRUCTIONS
                + "\n"
                + prompts.name_content(item.kind, item.members, item.context),
            ),
        ],
        params=SamplingParams(max_tokens=NAME_MAX_TOKENS),
        json_schema=prompts.NAME_SCHEMA,
        tag=f"annotate-name:{i}",
    )


def parse_name(text: str) -> str:
    value = parse_json(text)
    name = value.get("name") if isinstance(value, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise ModelOutputError("no name")
    words = name.replace("\n", " ").split()
    return " ".join(words[:MAX_NAME_WORDS])[:60]


def name_concepts(chat: ChatModel, items: Sequence[NameItem]) -> tuple[list[str | None], CallStats]:
    """A short name per concept, in ONE batch; None where the reply is unusable."""
    stats = CallStats(requests=len(items))
    results = chat.chat([name_request(it, i) for i, it in enumerate(items)]) if items else []
    out: list[str | None] = []
    for i, res in enumerate(results):
        if res.error:
            stats.failed += 1
            stats.note(f"name {i}: {res.error}")
            out.append(None)
            continue
        try:
            out.append(parse_name(res.text))
        except ModelOutputError as e:
            stats.unparsable += 1
            stats.note(f"name {i}: {e}")
            out.append(None)
    return out, stats
