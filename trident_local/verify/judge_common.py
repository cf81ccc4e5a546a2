"""What every judge shares: the items it judges, the pages it reads, and batched chat calls.

A judge turns a list of :class:`JudgeItem` (claim, document, page) into one
:class:`Judgement` per item, in order. Model judges send their requests in
batches of ``batch_size`` through ``ChatModel.chat``; a failed request
(``ChatResult.error``), an exception from a whole batch, or an unusable reply
each give that item the verdict "unknown" with the error recorded, and the
other items go on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from trident_local.models.budget import budget_of, fit, reply_token_bound
from trident_local.verify.model_json import parse_verdict
from trident_local.verify.types import JUDGE_VERDICTS, UNKNOWN, Judgement

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(JUDGE_VERDICTS)},
        "rationale": {"type": "string", "maxLength": 300},
    },
    "required": ["verdict", "rationale"],
}

JUDGE_INSTRUCTIONS = (
    "You check whether one page of a document supports a claim. Use only what the page shows; "
    "do not use outside knowledge.\n"
    "- supported: the page states everything the claim says (numbers, names, dates must match).\n"
    "- partial: the page states part of the claim, and the rest is missing from the page.\n"
    "- unsupported: the page does not state the claim, or contradicts it.\n"
    'Reply with JSON only: {"verdict": "supported" | "partial" | "unsupported", '
    '"rationale": "<one short sentence quoting the page>"}'
)


@dataclass(frozen=True)
class JudgeItem:
    claim: str
    doc_id: str
    page: int


class PageSource(Protocol):
    """Where judges read pages from (an IndexStore through :class:`StorePages`, or a test fake)."""

    def n_pages(self, doc_id: str) -> int: ...

    def text(self, doc_id: str, page: int) -> str: ...

    def image(self, doc_id: str, page: int) -> Path: ...


class StorePages:
    """A :class:`PageSource` over an index: page text (text layer or OCR) and rendered page images."""

    def __init__(self, store: Any):
        self.store = store

    def n_pages(self, doc_id: str) -> int:
        return self.store.document(doc_id).n_pages

    def text(self, doc_id: str, page: int) -> str:
        p = self.store.document(doc_id).page(page)
        if not p.text.strip():
            return ""  # a section path inherited from earlier pages is not text on this page
        head = " > ".join(p.section_path)
        return f"{head}\n{p.text}" if head else p.text

    def image(self, doc_id: str, page: int) -> Path:
        return self.store.page_image(doc_id, page)

    def window_vectors(self, doc_id: str) -> tuple[Any, Any] | None:
        """The dense pool's stored window embeddings of a document: (vectors, page of each row), or None.

        Written by the dense pool at indexing time (``docs/<doc_id>/dense.npy`` and
        ``dense_pages.npy``, embedder = the index's ``config.embedder``); reusing them spares
        re-embedding every page the no-model scorer reads.
        """
        import numpy as np

        entry = self.store.manifest.documents.get(doc_id)
        if entry is None or not entry.stages.get("dense"):
            return None
        d = self.store.doc_dir(doc_id)
        try:
            return np.load(d / "dense.npy").astype(np.float32), np.load(d / "dense_pages.npy")
        except (OSError, ValueError):
            return None


class Judge(Protocol):
    """One grounding channel."""

    name: str
    channel: str  # "text" | "image"
    calls: int  # model requests sent so far

    def judge(self, items: Sequence[JudgeItem]) -> list[Judgement]: ...


class ChatJudge(ABC):
    """Shared batching and untrusted-output handling for model judges; subclasses build messages."""

    channel = "text"

    def __init__(self, model: Any, pages: PageSource, *, batch_size: int = 16, max_tokens: int | None = None):
        """``max_tokens``: per reply; default the longest reply JUDGE_SCHEMA admits."""
        self.model = model
        self.pages = pages
        self.batch_size = max(1, int(batch_size))
        self.max_tokens = max_tokens or reply_token_bound(JUDGE_SCHEMA)
        self.name = f"{getattr(model, 'name', type(model).__name__)}"
        self.calls = 0

    @abstractmethod
    def messages(self, item: JudgeItem) -> list[Any]:
        """The chat messages asking the model about one item."""

    def skip_reason(self, item: JudgeItem) -> str | None:
        """A reason not to ask the model about this item (nothing to read), or None."""
        return None

    def message_versions(self, item: JudgeItem) -> Iterator[tuple[str, list[Any]]]:
        """The messages for one item, fullest first, then shorter ones to fit a small context
        (labelled with what they cut); the default has no shorter version."""
        yield "", self.messages(item)

    def judge(self, items: Sequence[JudgeItem]) -> list[Judgement]:
        from trident_local.models.protocols import ChatRequest, SamplingParams

        out: list[Judgement | None] = [None] * len(items)
        todo: list[tuple[int, Any]] = []
        for i, it in enumerate(items):
            why = self.skip_reason(it)
            if why:
                out[i] = Judgement(UNKNOWN, "", self.channel, it.page, self.name, error=why)
                continue
            params = SamplingParams(max_tokens=self.max_tokens)
            try:
                req, _ = fit(budget_of(self.model), (
                    (label, ChatRequest(messages=msgs, params=params, json_schema=JUDGE_SCHEMA,
                                        tag=f"verify.{self.channel}"))
                    for label, msgs in self.message_versions(it)))
            except Exception as e:  # a page that cannot be read or rendered: this item only
                out[i] = Judgement(UNKNOWN, "", self.channel, it.page, self.name,
                                   error=f"could not prepare the page: {type(e).__name__}: {e}")
                continue
            todo.append((i, req))
        for b in range(0, len(todo), self.batch_size):
            chunk = todo[b : b + self.batch_size]
            self.calls += len(chunk)
            try:
                results = list(self.model.chat([r for _, r in chunk]))
                if len(results) != len(chunk):
                    raise ValueError(f"the model returned {len(results)} results for {len(chunk)} requests")
            except Exception as e:  # one failed batch must not stop the others
                for i, _ in chunk:
                    out[i] = Judgement(UNKNOWN, "", self.channel, items[i].page, self.name,
                                       error=f"model call failed: {type(e).__name__}: {e}")
                continue
            for (i, _), res in zip(chunk, results, strict=True):
                if res.error:
                    out[i] = Judgement(UNKNOWN, "", self.channel, items[i].page, self.name,
                                       error=f"model call failed: {res.error}")
                    continue
                verdict, rationale, err = parse_verdict(res.text)
                out[i] = Judgement(verdict, rationale, self.channel, items[i].page, self.name, error=err)
        return [j for j in out if j is not None]
