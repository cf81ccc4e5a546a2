"""The model strategies of annotation: one batched chat call for all pages, one for all concept names.

Model output is untrusted: each reply is parsed and checked; a reply that fails
(backend error, no JSON, wrong shape) yields None for that item, the caller
falls back to the no-model strategy for it, and the failure is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from trident_local.annotate import prompts
from trident_local.annotate.captions import cut_words
from trident_local.docs.model import Document, Page
from trident_local.errors import ModelOutputError
from trident_local.models import structured
from trident_local.models.budget import Fit, budget_of, char_caps, fit, reply_token_bound
from trident_local.models.protocols import ChatModel, ChatRequest, ImagePart, Message, SamplingParams
from trident_local.models.structured import CallStats
from trident_local.text import Entity

__all__ = ["CallStats", "NameItem", "PageModelOutput", "annotate_pages", "name_concepts"]

MAX_MODEL_ENTITIES = 40
MAX_NAME_WORDS = 6
# The longest whitespace-free reply each schema admits (25 entities of <= 60 characters, a
# 500-character caption; a 60-character name), at one token a character: a constrained reply
# always finishes. One that is cut all the same (multi-token characters) is re-sent once with
# twice the room, within the model's context.
PAGE_MAX_TOKENS = reply_token_bound(structured.json_schema(prompts.page_schema(False)))
CAPTION_MAX_TOKENS = reply_token_bound(structured.json_schema(prompts.page_schema(True))) - PAGE_MAX_TOKENS
NAME_MAX_TOKENS = reply_token_bound(structured.json_schema(prompts.ConceptName))
MIN_PAGE_TEXT_CHARS = 300  # below this a page call says too little to be worth its reply


@dataclass
class PageModelOutput:
    caption: str | None  # None when the call did not ask for one (text-only model)
    entities: list[Entity]


def _objects(page: Page) -> list[str]:
    return [
        f"{o.label or o.type}" + (f" ({o.caption[:80]})" if o.caption else "")
        for o in page.objects
        if o.type in ("table", "figure", "equation")
    ]


def page_request(
    page: Page, image: Path | None, with_caption: bool, text_chars: int = prompts.PAGE_TEXT_CHARS,
    objects: bool = True,
) -> ChatRequest:
    content: list[str | ImagePart] = [prompts.page_instructions(with_caption)]
    if image is not None:
        content.append(ImagePart(path=str(image)))
    content.append(
        prompts.page_content(page.number, page.section, page.text[:text_chars], _objects(page) if objects else [])
    )
    return ChatRequest(
        messages=[Message("system", prompts.PAGE_SYSTEM), Message("user", content)],
        params=SamplingParams(max_tokens=PAGE_MAX_TOKENS + (CAPTION_MAX_TOKENS if with_caption else 0)),
        json_schema=structured.json_schema(prompts.page_schema(with_caption)),
        tag=f"annotate-page:{page.number}",
    )


def fitted_page_request(
    chat: ChatModel, page: Page, image: Path | None, with_caption: bool
) -> tuple[ChatRequest, Fit]:
    """The page call that fits the model's context: the page text's tail is cut first (down to
    MIN_PAGE_TEXT_CHARS), then the list of detected objects; a page that does not fit even so
    is refused by the runtime and falls back to the no-model annotation."""
    full = min(len(page.text), prompts.PAGE_TEXT_CHARS)

    def versions() -> Iterator[tuple[str, ChatRequest]]:
        yield "", page_request(page, image, with_caption)
        for cap in char_caps(full, MIN_PAGE_TEXT_CHARS):
            yield f"page-text to {cap} chars", page_request(page, image, with_caption, cap)
        if _objects(page):
            yield "objects dropped", page_request(page, image, with_caption, min(full, MIN_PAGE_TEXT_CHARS), False)

    return fit(budget_of(chat), versions())


def page_output(value: prompts.PageEntities) -> PageModelOutput:
    """Our annotation from a validated reply: entities normalised and capped, caption cut to length."""
    ents = [Entity(" ".join(e.text.split()), e.type) for e in value.entities if e.text.strip()]
    caption = cut_words(value.caption) if isinstance(value, prompts.CaptionedPage) else None
    return PageModelOutput(caption, ents[:MAX_MODEL_ENTITIES])


def parse_page_output(text: str, with_caption: bool) -> PageModelOutput:
    """Strict parse (safe repairs only: invalid entity items are dropped); ModelOutputError otherwise."""
    return page_output(structured.parse_reply(text, prompts.page_schema(with_caption))[0])


def annotate_pages(
    chat: ChatModel, doc: Document, image_of: Callable[[int], Path] | None
) -> tuple[list[PageModelOutput | None], CallStats]:
    """Caption (when the model sees images) and entities for every page, in ONE batch."""
    with_caption = bool(chat.supports_images and image_of is not None)
    stats = CallStats()
    reqs = []
    for p in doc.pages:
        req, how = fitted_page_request(chat, p, image_of(p.number) if with_caption and image_of else None,
                                       with_caption)
        stats.note_fit(how)
        reqs.append(req)
    replies = structured.call(chat, reqs, prompts.page_schema(with_caption), stats)
    return [page_output(r.value) if r.value is not None else None for r in replies], stats


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
        params=SamplingParams(max_tokens=NAME_MAX_TOKENS),  # the name is one short line: no fitting
        json_schema=structured.json_schema(prompts.ConceptName),
        tag=f"annotate-name:{i}",
    )


def short_name(value: prompts.ConceptName) -> str | None:
    words = value.name.replace("\n", " ").split()
    return " ".join(words[:MAX_NAME_WORDS])[:60] or None


def parse_name(text: str) -> str:
    name = short_name(structured.parse_reply(text, prompts.ConceptName)[0])
    if name is None:
        raise ModelOutputError("no name")
    return name


def name_concepts(chat: ChatModel, items: Sequence[NameItem]) -> tuple[list[str | None], CallStats]:
    """A short name per concept, in ONE batch; None where the reply is unusable."""
    stats = CallStats()
    reqs = [name_request(it, i) for i, it in enumerate(items)]
    replies = structured.call(chat, reqs, prompts.ConceptName, stats)
    return [short_name(r.value) if r.value is not None else None for r in replies], stats
