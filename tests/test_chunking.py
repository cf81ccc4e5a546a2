"""Dense windows: word windows for old indexes, token windows under the embedder's tokenizer for new ones."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from trident_local.config import Config
from trident_local.models.profiles import build_model
from trident_local.models.protocols import TextEmbedder
from trident_local.store.manifest import Manifest
from trident_local.windows import WindowSpec, content_words, token_windows, windows

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def one_token_each(words):
    return [1] * len(words)


def test_token_windows_cover_the_text_in_order_within_the_budget() -> None:
    text = " ".join(f"w{i}" for i in range(25))
    out = token_windows(text, one_token_each, 10)
    assert " ".join(out) == text  # side by side, nothing lost, nothing repeated
    assert [len(w.split()) for w in out] == [9, 9, 7]  # 3 windows, about equal: no 5-word stub at the end
    assert token_windows(text, one_token_each, 25) == [text]
    assert token_windows("  \n ", one_token_each, 10) == []


def test_a_word_longer_than_the_budget_stands_alone() -> None:
    counts = {"a": 1, "huge": 30, "b": 1}
    out = token_windows("a a huge b b", lambda ws: [counts[w] for w in ws], 4)
    assert out == ["a a", "huge", "b b"]


def test_word_windows_unchanged() -> None:
    text = " ".join(str(i) for i in range(10))
    assert windows(text, 4, 4) == ["0 1 2 3", "4 5 6 7", "6 7 8 9"]


@pytest.fixture(scope="module")
def minilm() -> TextEmbedder:
    return build_model("embedder", "minilm")


def sample_page_text() -> str:
    with pymupdf.open(next(iter(sorted(SAMPLES.glob("*.pdf"))))) as doc:
        return " ".join(page.get_text() for page in doc)


def test_minilm_counts_tokens_as_its_tokenizer_does(minilm: TextEmbedder) -> None:
    words = ["Revenue", "grew", "12.5%", "to", "$1,234", "million", "(FY2023),", "see", "Table", "3."]
    counts = minilm.word_tokens(words)
    assert len(counts) == len(words) and all(c >= 1 for c in counts)
    assert counts[words.index("$1,234")] > 1  # punctuation splits a number into several tokens
    assert minilm.passage_overhead == 2  # [CLS] and [SEP]


def test_every_token_window_fits_the_model(minilm: TextEmbedder) -> None:
    text = sample_page_text()
    spec = Config().windows()
    assert spec.tokens == 128
    out = spec.cut(text, minilm)
    assert len(out) > 1 and " ".join(out) == content_words(text)
    tok = minilm._counter._tok  # type: ignore[attr-defined]  # untruncated copy of the model's tokenizer
    lengths = [len(tok.encode(w).ids) for w in out]  # with [CLS] and [SEP]
    assert max(lengths) <= 128
    assert min(lengths) > 128 // 3  # balanced: no stub windows
    # the model's max_tokens caps a larger budget
    long = WindowSpec(tokens=10_000).cut(text, minilm)
    assert max(len(tok.encode(w).ids) for w in long) <= minilm.max_tokens


def test_an_embedder_without_a_tokenizer_gets_word_windows() -> None:
    class Plain:
        max_tokens = 256

    text = " ".join(str(i) for i in range(400))
    assert WindowSpec(160, 160, 128).cut(text, Plain()) == windows(text, 160, 160)


def test_an_index_written_before_token_windows_keeps_its_word_windows(tmp_path: Path) -> None:
    new = Manifest(config=Config()).to_dict()
    assert Manifest.from_dict(json.loads(json.dumps(new))).config.chunk_tokens == 128
    del new["config"]["chunk_tokens"], new["config"]["chunk_drop_stop_words"]  # what an older version wrote
    old = Manifest.from_dict(new).config
    assert old.chunk_tokens == 0 and old.windows() == WindowSpec(160, 160, 0)
    assert Config.from_dict({}).chunk_tokens == 128  # a new index's config from nothing: today's default


def test_an_index_written_before_stop_words_were_dropped_keeps_every_word() -> None:
    new = Manifest(config=Config()).to_dict()
    assert Manifest.from_dict(json.loads(json.dumps(new))).config.windows().drop_stop_words
    del new["config"]["chunk_drop_stop_words"]  # what an older version wrote
    old = Manifest.from_dict(new).config
    assert old.windows() == WindowSpec(160, 160, 128, drop_stop_words=False)
    # the dense pool's fingerprint tells the two apart, so neither index mixes the other's vectors
    assert old.windows().describe() == "tokens128"
    assert Config().windows().describe() == "tokens128-nostop"
    assert WindowSpec(160, 160, 0, drop_stop_words=True).describe() == "words160/160-nostop"


def test_content_words_leave_out_function_words_only() -> None:
    text = "The revenue of \u201cthe Company\u201d (in 2023) was, as of June, $1.2 bn; THE best. Interest, System, three, US"
    assert content_words(text) == "revenue Company\u201d 2023) June, $1.2 bn; best. Interest, System, three, US"
    assert content_words("") == "" and content_words("the of and") == ""
    plain = WindowSpec(160, 160, 0, drop_stop_words=True)
    assert plain.cut("the cat sat on the mat", object()) == ["cat sat mat"]


def test_a_slow_tokenizer_counts_like_the_fast_one() -> None:
    """A model whose tokenizer has no `tokenizers` backend is counted word by word, to the same numbers."""
    from transformers import BertTokenizer, BertTokenizerFast

    from trident_local.models.backends._tokens import WordTokenCounter
    from trident_local.models.profiles import load_profile

    folder = str(load_profile("minilm").weights_path())
    words = sample_page_text().split()[:300]
    slow = WordTokenCounter(BertTokenizer.from_pretrained(folder))
    fast = WordTokenCounter(BertTokenizerFast.from_pretrained(folder).backend_tokenizer)
    assert slow(words) == fast(words) and slow.specials == fast.specials == 2
