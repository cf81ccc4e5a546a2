"""Annotation through a chat model: one batch per document, strict parsing, per-item no-model fallback.

Tiny random models check the real plumbing (prompts through chat templates,
images through the VLM processor) and that their garbage falls back cleanly; a
scripted model checks that good replies are used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from tiny_models import tiny_chat_profile

from trident_local.annotate import annotation_stage, load
from trident_local.annotate import model_calls as mc
from trident_local.annotate.model_calls import parse_name, parse_page_output
from trident_local.errors import ModelOutputError
from trident_local.index import Index
from trident_local.models.profiles import build_model
from trident_local.models.protocols import ChatRequest, ChatResult

pytestmark = pytest.mark.integration

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


class ScriptedChat:
    """A ChatModel whose reply is a function of the request; records every batch it receives."""

    name = "scripted"
    supports_json_schema = True

    def __init__(self, reply: Callable[[ChatRequest], str | None], supports_images: bool = False):
        self.reply = reply
        self.supports_images = supports_images
        self.batches: list[list[ChatRequest]] = []

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        self.batches.append(list(requests))
        out = []
        for r in requests:
            text = self.reply(r)
            out.append(ChatResult("", error="boom") if text is None else ChatResult(text))
        return out


def good_reply(req: ChatRequest) -> str | None:
    if req.tag == "annotate-page:2":
        return None  # a failed request: that page falls back
    if req.tag.startswith("annotate-page"):
        return json.dumps(
            {
                "caption": "A bar chart of revenue by region.",
                "entities": [
                    {"text": "Coastal", "type": "name"},
                    {"text": "95.2", "type": "money"},
                    {"text": "x", "type": "weird"},
                    "junk",
                ],
            }
        )
    return '```json\n{"name": "Regional revenue growth over the years and more words"}\n```'


def make_index(path: Path, chat, profile: str = "scripted") -> Index:
    ix = Index.create(path)
    ix.models.provide("chat", chat, profile)  # inject the model under test into the index's runtime
    stage = annotation_stage(ix, profile)
    assert stage[1].models()[1] is chat
    ix.doc_stages.append(stage)
    ix.add([SAMPLES / "helios_annual_report_2023.pdf"], workers=1)
    return ix


def test_parse_page_output_repairs_and_rejects() -> None:
    out = parse_page_output(
        'noise {"caption": "' + "word " * 80 + '", "entities": [{"text": " 12 % ", '
        '"type": "percent"}, {"text": "", "type": "name"}, {"text": "A", "type": "bogus"}]}',
        True,
    )
    assert len(out.caption.split()) == 61 and out.caption.endswith("...")  # cut to 60 words
    assert [(e.text, e.type) for e in out.entities] == [("12 %", "percent")]
    with pytest.raises(ModelOutputError):
        parse_page_output("no json at all", True)
    with pytest.raises(ModelOutputError):
        parse_page_output('{"entities": []}', True)  # caption required when asked for
    assert parse_page_output('{"entities": []}', False).caption is None
    assert parse_name('{"name": "one two three four five six seven"}') == "one two three four five six"
    with pytest.raises(ModelOutputError):
        parse_name('{"name": ""}')


def test_one_batch_for_pages_one_for_names_and_fallbacks(tmp_path: Path) -> None:
    chat = ScriptedChat(good_reply, supports_images=True)
    ix = make_index(tmp_path / "ix", chat)
    assert len(chat.batches) == 2  # pages, then concept names: never one call per page
    pages, names = chat.batches
    assert [r.tag for r in pages] == ["annotate-page:1", "annotate-page:2", "annotate-page:3"]
    assert all(r.messages[1].images() for r in pages)  # a VLM sees the rendered page
    assert all(r.tag.startswith("annotate-name") for r in names)
    ann = load(ix.store, ix.store.doc_ids()[0]).annotation
    assert ann.page(1).visual == "A bar chart of revenue by region."
    assert ann.page(2).visual.startswith("Table 1")  # failed request -> no-model caption
    assert [e.text for e in ann.page(1).entities] == ["Coastal", "95.2"]
    assert ann.strategies["caption"].startswith("model:scripted")
    assert ann.stats["chat"]["failed"] == 1 and ann.stats["chat"]["requests"] == 3 + len(names)
    t_names = [c.name for c in ann.concepts if c.kind in "TE"]
    assert t_names and all(n == "Regional revenue growth over the years" for n in t_names)


def test_text_only_model_gets_no_images_and_keeps_object_captions(tmp_path: Path) -> None:
    chat = ScriptedChat(
        lambda r: (
            '{"entities": [{"text": "Helios Grid", "type": "name"}]}'
            if r.tag.startswith("annotate-page")
            else "garbage"
        )
    )
    ix = make_index(tmp_path / "ix", chat)
    pages = chat.batches[0]
    assert not any(r.messages[1].images() for r in pages)
    assert "caption" not in pages[0].json_schema["properties"]
    ann = load(ix.store, ix.store.doc_ids()[0]).annotation
    assert ann.strategies["caption"] == "no-model:detected-objects"
    assert ann.page(2).visual.startswith("Table 1")
    assert ann.stats["chat"]["unparsable"] == len(chat.batches[1])  # every name reply was garbage
    assert all(c.name for c in ann.concepts)  # ... and fell back to top terms


@pytest.mark.parametrize("kind", ["llama", "qwen25vl"])
def test_tiny_model_annotation_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setattr(mc, "PAGE_MAX_TOKENS", 24)
    monkeypatch.setattr(mc, "NAME_MAX_TOKENS", 8)
    chat = build_model("chat", tiny_chat_profile(tmp_path, kind))
    calls: list[int] = []
    real = chat.chat

    def counting(reqs):
        calls.append(len(reqs))
        return real(reqs)

    chat.chat = counting
    ix = make_index(tmp_path / "ix", chat, profile=f"tiny-{kind}")
    # one batch of 3 pages, one of names; each batch's replies cut by max_tokens re-sent once, batched
    assert calls[0] == 3 and 2 <= len(calls) <= 4
    ann = load(ix.store, ix.store.doc_ids()[0]).annotation
    st = ann.stats["chat"]
    assert sum(calls) == st["requests"] + st["length_retried"]
    assert st["length_retried"] <= st["length_cut"]
    assert st["failed"] + st["unparsable"] == st["requests"]  # random weights: nothing parses ...
    assert ann.page(2).visual.startswith("Table 1") and ann.page(2).entities  # ... and all fell back
    assert ann.strategies["entities"].startswith(f"model:tiny-{kind}")
