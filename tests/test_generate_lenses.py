"""Answer generation: format gate, plain call, three lenses in one batch + synthesis, guard rules."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from tiny_models import tiny_chat_profile

from trident_local.generate import model_answer as ma
from trident_local.generate.answer import answer_question
from trident_local.generate.gate import gate
from trident_local.generate.model_answer import parse_answer, rule_pick
from trident_local.generate.records import NOT_ANSWERABLE
from trident_local.index import Index
from trident_local.models.profiles import build_model
from trident_local.models.protocols import ChatRequest, ChatResult
from trident_local.text import answer_type, question_kind

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


class ScriptedChat:
    name = "scripted"
    supports_json_schema = True

    def __init__(self, reply: Callable[[ChatRequest], str | None], supports_images: bool = False):
        self.reply = reply
        self.supports_images = supports_images
        self.batches: list[list[ChatRequest]] = []

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        self.batches.append(list(requests))
        return [
            ChatResult("", error="x") if (t := self.reply(r)) is None else ChatResult(t) for r in requests
        ]


def lens_replies(
    answers: dict[str, str | None], synthesis: str | None
) -> Callable[[ChatRequest], str | None]:
    def reply(req: ChatRequest) -> str | None:
        if req.tag == "answer-synthesis":
            return synthesis
        text = answers[req.tag.split(":")[1]]
        return None if text is None else json.dumps({"answer": text})

    return reply


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    ix = Index.create(tmp_path_factory.mktemp("idx") / "ix")
    ix.add([SAMPLES / "helios_annual_report_2023.pdf"], workers=1)
    return ix


def hits_of(index: Index, pages: list[int]):
    from trident_local.retrieve.base import Hit

    d = index.store.doc_ids()[0]
    return [Hit(d, p, 1.0 / (i + 1), "bm25") for i, p in enumerate(pages)]


@pytest.mark.parametrize(
    ("q", "kind", "atype"),
    [
        ("Which is larger, (A) Coastal or (B) Desert?", "multiple-choice", "other"),
        ("How many megawatts were connected in 2023?", "short-extractive", "numeric"),
        ("What year did Red Mesa open?", "short-extractive", "other"),
        ("Which page shows the revenue table?", "open", "location"),
        ("Why did the net margin improve and what drove it?", "open", "other"),
    ],
)
def test_gate_and_answer_type(q: str, kind: str, atype: str) -> None:
    assert question_kind(q) == kind and answer_type(q) == atype
    mode, why = gate(q, "auto")
    assert mode == ("lenses" if kind == "open" else "plain") and why.startswith("auto")
    assert gate(q, "lenses")[0] == "lenses" and gate(q, "plain")[0] == "plain"


def test_rule_pick() -> None:
    lenses = {"topical": "about 95", "entity": "95.2", "structural": "Table 1 on page 2"}
    assert rule_pick(lenses, "numeric")[0] == "95.2"
    assert rule_pick(lenses, "location")[0] == "Table 1 on page 2"
    agree = {"topical": "Desert region", "entity": "the Desert region", "structural": "Coastal"}
    assert rule_pick(agree, "other")[0] in ("Desert region", "the Desert region")
    none = {k: NOT_ANSWERABLE for k in lenses}
    assert rule_pick(none, "other")[0] == NOT_ANSWERABLE
    assert rule_pick({**none, "structural": "page 3"}, "numeric")[0] == "page 3"  # entity lens said NA


def test_parse_answer() -> None:
    assert parse_answer(ChatResult('{"answer": " 95.2 "}')) == "95.2"
    assert parse_answer(ChatResult("The answer is 95.2")) == "The answer is 95.2"  # no JSON: raw text
    assert parse_answer(ChatResult('{"answer": ["a", "b"]}')) == "['a', 'b']"
    cut = '{"answer": "Revenue grew 12% in the {"region": "Coastal"} and'
    for bad in (
        ChatResult("", error="down"),
        ChatResult('{"answer": ""}'),
        ChatResult("   "),
        ChatResult(cut),  # truncated JSON is never shown as the answer
        ChatResult('{"answer": "95.2"}', finish_reason="length"),  # cut by max_tokens
    ):
        with pytest.raises(Exception):  # noqa: B017 - ModelOutputError, any unusable reply
            parse_answer(bad)


def test_lenses_one_batch_then_synthesis(index: Index) -> None:
    chat = ScriptedChat(
        lens_replies(
            {"topical": "Revenue grew", "entity": "95.2", "structural": "Table 1"},
            '{"answer": "95.2 million dollars"}',
        )
    )
    q = "Why did revenue in the Coastal region change, and by how much?"
    chat.name = "s"  # the mode names the chat model
    a = answer_question(index, q, hits_of(index, [2, 1]), mode="auto", chat=chat)
    assert [len(b) for b in chat.batches] == [3, 1]  # three lens calls in ONE batch, then synthesis
    assert [r.tag for r in chat.batches[0]] == [
        "answer-lens:topical",
        "answer-lens:entity",
        "answer-lens:structural",
    ]
    assert a.mode == "lenses:s" and a.text == "95.2 million dollars" and a.synthesis == "synthesis"
    assert a.lenses == {"topical": "Revenue grew", "entity": "95.2", "structural": "Table 1"}
    assert [c.page for c in a.citations] == [2, 1]
    page_text = chat.batches[0][0].messages[1].text()
    assert (
        "[helios_annual_report_2023.pdf, page 2]" in page_text and "Coastal" in page_text
    )  # text-only model


def test_all_lenses_not_answerable_skips_synthesis(index: Index) -> None:
    chat = ScriptedChat(
        lens_replies(
            dict.fromkeys(("topical", "entity", "structural"), NOT_ANSWERABLE), '{"answer": "made up"}'
        )
    )
    a = answer_question(
        index, "Explain the CEO's hobbies", hits_of(index, [1]), mode="lenses", chat=chat
    )
    assert a.text == NOT_ANSWERABLE and len(chat.batches) == 1


def test_synthesis_cannot_say_not_answerable_alone(index: Index) -> None:
    chat = ScriptedChat(
        lens_replies(
            {"topical": NOT_ANSWERABLE, "entity": "412", "structural": None},
            json.dumps({"answer": NOT_ANSWERABLE}),
        )
    )
    a = answer_question(
        index,
        "How many megawatts of solar were connected, and where?",
        hits_of(index, [1]),
        mode="lenses",
        chat=chat,
    )
    assert (
        a.text == "412"
        and "entity lens" in a.synthesis
        and a.errors == ["lens structural: model call failed: x"]
    )
    chat = ScriptedChat(lens_replies({"topical": "a", "entity": "412", "structural": "b"}, None))
    a = answer_question(index, "What total capacity?", hits_of(index, [1]), mode="lenses", chat=chat)
    assert a.text == "412" and "synthesis unusable" in a.synthesis


def test_plain_with_a_vlm_sends_page_images(index: Index) -> None:
    chat = ScriptedChat(lambda r: '{"answer": "95.2"}', supports_images=True)
    chat.name = "vlm"
    a = answer_question(
        index,
        "How much revenue did Coastal make in 2023?",
        hits_of(index, [2]),
        mode="auto",
        chat=chat,
    )
    assert a.mode == "plain:vlm" and a.text == "95.2" and a.gate.startswith("auto: short-extractive")
    imgs = chat.batches[0][0].messages[1].images()
    assert len(imgs) == 1 and Path(imgs[0].path).exists()


@pytest.mark.parametrize("kind", ["llama", "qwen25vl"])
def test_tiny_models_plain_and_lenses(
    index: Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(ma, "MAX_TOKENS", 8)
    monkeypatch.setattr("trident_local.generate.pages.TEXT_CHARS_PER_PAGE", 400)
    chat = build_model("chat", tiny_chat_profile(tmp_path, kind))
    hits = hits_of(index, [2])
    plain = answer_question(index, "How many regions?", hits, mode="plain", chat=chat)
    assert (
        plain.mode == f"plain:{chat.name}" and plain.text
    )  # garbage, but an answer (or "Not answerable" + error)
    lens = answer_question(index, "Why did revenue grow?", hits, mode="lenses", chat=chat)
    assert set(lens.lenses) == {"topical", "entity", "structural"} and lens.text and lens.synthesis
