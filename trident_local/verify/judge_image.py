"""The image channel: the rendered page image and the claim -> a VLM judge, same JSON verdict schema."""

from __future__ import annotations

from typing import Any

from trident_local.errors import TridentError
from trident_local.verify.judge_common import JUDGE_INSTRUCTIONS, ChatJudge, JudgeItem, PageSource
from trident_local.verify.types import IMAGE


class VLMImageJudge(ChatJudge):
    """Asks a vision-language chat model whether the page image supports the claim."""

    channel = IMAGE

    def __init__(self, model: Any, pages: PageSource, *, batch_size: int = 8, max_tokens: int | None = None):
        if not getattr(model, "supports_images", False):
            raise TridentError(
                f"the image judge needs a vision-language chat model; {getattr(model, 'name', model)!r} takes no images"
            )
        super().__init__(model, pages, batch_size=batch_size, max_tokens=max_tokens)

    def messages(self, item: JudgeItem) -> list[Any]:
        from trident_local.models.protocols import ImagePart, Message

        path = self.pages.image(item.doc_id, item.page)
        return [
            Message("system", JUDGE_INSTRUCTIONS),
            Message("user", [f"Claim: {item.claim}\n\nPage {item.page} of the document:", ImagePart(path=str(path))]),
        ]
