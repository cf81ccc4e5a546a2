"""The selected pages as chat message content: images for a VLM, page text for a text-only model."""

from __future__ import annotations

from collections.abc import Sequence

from trident_local.models.protocols import ChatModel, ContentPart, ImagePart
from trident_local.retrieve.base import Hit
from trident_local.store.index_store import IndexStore

TEXT_CHARS_PER_PAGE = 3000


def page_content(
    store: IndexStore, hits: Sequence[Hit], chat: ChatModel, text_chars: int = TEXT_CHARS_PER_PAGE
) -> list[ContentPart]:
    """One labelled part per page, in rank order; a page's text cut at ``text_chars``."""
    parts: list[ContentPart] = []
    for h in hits:
        doc = store.document(h.doc_id)
        label = f"[{doc.file_name}, page {h.page}]"
        if chat.supports_images:
            parts += [label, ImagePart(path=str(store.page_image(h.doc_id, h.page)))]
        else:
            text = " ".join(doc.page(h.page).text.split())[:text_chars]
            parts.append(f"{label}\n{text or '(no text layer on this page)'}")
    return parts
