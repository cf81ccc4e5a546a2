"""Tokens per word under a model's `tokenizers` tokenizer: what token-budget windows are cut by."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class WordTokenCounter:
    """Tokens per whitespace word under a model's tokenizer, special tokens excluded.

    A `tokenizers` tokenizer (what every fast Hugging Face tokenizer wraps) is copied without
    truncation or padding, and a whole page is counted in one call; a slow (pure Python) Hugging
    Face tokenizer is asked word by word."""

    def __init__(self, tokenizer: Any) -> None:
        self._slow = None
        if not hasattr(tokenizer, "to_str"):
            self._slow = tokenizer
            self.specials = int(tokenizer.num_special_tokens_to_add(False))
            return
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_str(tokenizer.to_str())
        self._tok.no_truncation()
        self._tok.no_padding()
        self.specials = int(self._tok.post_processor.num_special_tokens_to_add(False)) \
            if self._tok.post_processor is not None else 0

    def __call__(self, words: Sequence[str]) -> list[int]:
        if not words:
            return []
        if self._slow is not None:
            return [len(self._slow.tokenize(w)) for w in words]
        enc = self._tok.encode(list(words), is_pretokenized=True, add_special_tokens=False)
        counts = [0] * len(words)
        for w in enc.word_ids:
            if w is not None:
                counts[w] += 1
        return counts

    def text_tokens(self, text: str) -> int:
        """Tokens of ``text`` itself (e.g. a prefix), special tokens excluded."""
        return sum(self(text.split()))
