"""Tokens per word under a model's `tokenizers` tokenizer: what token-budget windows are cut by."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class WordTokenCounter:
    """Tokens per whitespace word under a `tokenizers` tokenizer, special tokens excluded.

    A copy of the tokenizer without truncation or padding: a whole page is counted in one call."""

    def __init__(self, tokenizer: Any) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_str(tokenizer.to_str())
        self._tok.no_truncation()
        self._tok.no_padding()
        self.specials = int(self._tok.post_processor.num_special_tokens_to_add(False)) \
            if self._tok.post_processor is not None else 0

    def __call__(self, words: Sequence[str]) -> list[int]:
        if not words:
            return []
        enc = self._tok.encode(list(words), is_pretokenized=True, add_special_tokens=False)
        counts = [0] * len(words)
        for w in enc.word_ids:
            if w is not None:
                counts[w] += 1
        return counts

    def text_tokens(self, text: str) -> int:
        """Tokens of ``text`` itself (e.g. a prefix), special tokens excluded."""
        return sum(self(text.split()))
