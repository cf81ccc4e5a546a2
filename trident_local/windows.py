"""Split page text into word windows, so a small-context embedder sees all of a page.

Two ways to cut: fixed word counts (``windows``; what indexes built before token windows keep), or
token budgets under the embedder's own tokenizer (``token_windows``; the default of a new index), so
that no window runs past what the model reads. With 160-word windows, a quarter of the public
subset's windows were longer than MiniLM's 256 tokens and 9% of the text was never embedded.

A new index also leaves English function words out of what it embeds (``content_words``): they were
a fifth of MiniLM's tokens on the indexing benchmark's text set (18% fewer windows on the public
subset), and dropping them kept dense retrieval where it was (docs/INDEX.md#dense-passages; figures in
benchmarks/README.md).
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from trident_local.text import EMBED_STOP_WORDS

# Stripped from a word's ends before the stop-word test, so "the," and "(of" count as stop words.
_EDGE_PUNCTUATION = string.punctuation + "\u201c\u201d\u2018\u2019"


def content_words(text: str) -> str:
    """``text`` without its English function words (``EMBED_STOP_WORDS``), matched case-insensitively
    after trimming punctuation; every other word as it was, in order."""
    return " ".join(w for w in text.split() if w.lower().strip(_EDGE_PUNCTUATION) not in EMBED_STOP_WORDS)


def windows(text: str, size: int, stride: int) -> list[str]:
    """Word windows of ``size`` words starting every ``stride`` words; the last one reaches the end."""
    words = text.split()
    if not words:
        return []
    if len(words) <= size:
        return [" ".join(words)]
    starts = list(range(0, len(words) - size + 1, stride))
    if starts[-1] + size < len(words):
        starts.append(len(words) - size)
    return [" ".join(words[s : s + size]) for s in starts]


def token_windows(text: str, word_tokens: Callable[[Sequence[str]], Sequence[int]], budget: int) -> list[str]:
    """Consecutive, non-overlapping word windows of at most ``budget`` tokens each.

    ``word_tokens(words)`` gives the tokens each word costs. As few windows as the budget allows,
    of about equal length (so the last is not a stub); a single word longer than the budget
    stands alone (the model truncates it)."""
    words = text.split()
    if not words:
        return []
    budget = max(1, budget)
    counts = list(word_tokens(words))
    total = sum(counts)
    target = math.ceil(total / math.ceil(total / budget)) if total else budget
    out: list[str] = []
    start, used = 0, 0
    for i, c in enumerate(counts):
        if i > start and (used + c > budget or used >= target):
            out.append(" ".join(words[start:i]))
            start, used = i, 0
        used += c
    out.append(" ".join(words[start:]))
    return out


@dataclass(frozen=True)
class WindowSpec:
    """How an index cuts page text for its embedder: token windows when ``tokens`` > 0 and the
    embedder can count its tokens, else ``words``-word windows every ``stride`` words."""

    words: int = 160
    stride: int = 160
    tokens: int = 0  # longest window in the embedder's tokens, special tokens and prefix included
    drop_stop_words: bool = False  # embed content words only (``content_words``)

    def cut(self, text: str, embedder: Any) -> list[str]:
        if self.drop_stop_words:
            text = content_words(text)
        count = getattr(embedder, "word_tokens", None) if self.tokens > 0 else None
        if count is None:
            return windows(text, self.words, self.stride)
        limit = min(self.tokens, int(getattr(embedder, "max_tokens", self.tokens) or self.tokens))
        return token_windows(text, count, limit - int(getattr(embedder, "passage_overhead", 0)))

    def describe(self) -> str:
        """A short stable label (part of the dense pool's fingerprint when tokens are used)."""
        base = f"tokens{self.tokens}" if self.tokens > 0 else f"words{self.words}/{self.stride}"
        return base + ("-nostop" if self.drop_stop_words else "")
