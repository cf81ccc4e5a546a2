"""Checks on request text that every endpoint shares: empty, too long, not encodable as UTF-8.

A JSON string may carry a lone UTF-16 surrogate (``"\\ud800"``): valid JSON, but no UTF-8
text, so a tokenizer or a file write fails deep inside the library with a 500. Refusing it at
the edge turns that into a 400 that names the field.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException

from trident_local.errors import TridentError


def check_encodable(field: str, value: Any) -> None:
    """400 when ``value`` (a string, or any JSON value) holds text that is not valid Unicode."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise TridentError(f"the {field} holds an unpaired UTF-16 surrogate at character {e.start}: "
                           "send valid Unicode text") from None


def check_text(field: str, value: Any, limit: int) -> str:
    """The text of ``value`` after the empty, length (413) and encoding (400) checks."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if not text.strip():
        raise TridentError(f"the {field} is empty")
    if len(text) > limit:
        raise HTTPException(413, f"the {field} is {len(text)} characters; the limit is {limit}")
    check_encodable(field, text)
    return text
