"""A floor under model verdicts: what a judge's "supported" cannot stand for, checked without a model.

A weak model judge says "supported" to anything: with SmolLM2-135M as reader and judge, replies
such as ``[', ']`` or one number repeated were all called "supported". Two checks need no model
and are not a matter of judgement:

- **no content** (:func:`no_content`): the answer is empty, has no letter or digit (punctuation,
  brackets, quotes: a list repr such as ``[', ']``), or is one word or number repeated
  (``"4 4 4"``, three times or more);
- **values not on the page** (:func:`values_missing`): a number the answer states (digits or number
  words, normalised as the no-model scorer does: "5,100" = "5100", "49%" = "49") is on none of the
  cited pages, not even scaled by a thousand, a million or a billion ("95.2 million" against
  "95,200,000"). A value computed from the page (a sum, a difference) is therefore not "supported"
  by a page-level judge: such answers carry their computation and are re-checked cell by cell
  (:func:`trident_local.generate.self_check.recheck_computation`).

:func:`floor` gives the reason a "supported" does not stand (or None); the verifier turns such a
model verdict into "unsupported" (flag ``floor``) and says why, and the answer's self-check flags
an answer with no content before any judge is asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from trident_local.verify.support_features import numbers

_WORD = re.compile(r"[^\W_]+")
REPEATS = 3  # one token this many times or more, and nothing else: no content
_SCALES = (Decimal(1000), Decimal(1000000), Decimal(1000000000))


def no_content(answer: str) -> str | None:
    """Why ``answer`` says nothing (empty, no letter or digit, one token repeated), or None."""
    text = answer.strip()
    if not text:
        return "the answer is empty"
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return f"the answer has no letter or digit: {text[:40]!r}"
    if len(words) >= REPEATS and len(set(words)) == 1:
        return f"the answer is one token repeated: {words[0]!r} x{len(words)}"
    return None


def _value(n: str) -> Decimal | None:
    try:
        return Decimal(n)
    except InvalidOperation:
        return None


def _on_pages(n: str, printed: set[str], values: set[Decimal]) -> bool:
    if n in printed:
        return True
    v = _value(n)
    if v is None:
        return False
    return any(v * s in values or v / s in values for s in _SCALES)


def values_missing(answer: str, pages: Iterable[str]) -> list[str]:
    """The numbers ``answer`` states that none of ``pages`` (their text) prints, in order, once each."""
    stated = list(dict.fromkeys(numbers(answer)))
    if not stated:
        return []
    printed = {n for text in pages for n in numbers(text)}
    values = {v for v in map(_value, printed) if v is not None}
    return [n for n in stated if not _on_pages(n, printed, values)]


def floor(answer: str, pages: Iterable[str]) -> str | None:
    """Why a judge's "supported" cannot stand for ``answer`` on ``pages`` (their text), or None."""
    why = no_content(answer)
    if why:
        return why
    missing = values_missing(answer, pages)
    if missing:
        return f"stated values on none of the cited pages: {', '.join(missing[:5])}"
    return None
