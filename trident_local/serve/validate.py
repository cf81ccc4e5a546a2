"""Checks on request text that every endpoint shares: empty, too long, not encodable, nested too deep.

A JSON string may carry a lone UTF-16 surrogate (``"\\ud800"``): valid JSON, but no UTF-8
text, so a tokenizer or a file write fails deep inside the library with a 500 (or, in a key or
an index config, makes every later write of that file fail). Every request model derives from
:class:`Body`, whose validator walks the raw JSON once, keys and values of every field, and
refuses such text (and nesting deeper than :data:`MAX_DEPTH`) with a 400 that names the field.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException
from pydantic import BaseModel, model_validator
from pydantic_core import PydanticCustomError

from trident_local.errors import TridentError

MAX_DEPTH = 16  # JSON nesting a request may use (a verify answer's claims are two levels deep)
REFUSED = ("unencodable_text", "too_deep")  # the validator's error types: a 400, not a 422


def unencodable(text: str) -> int | None:
    """The index of the first character that is no UTF-8 text (a lone surrogate), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start
    return None


def _surrogate_message(field: str, at: int) -> str:
    return f"the {field} holds an unpaired UTF-16 surrogate at character {at}: send valid Unicode text"


def _walk(value: Any, where: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise PydanticCustomError("too_deep", "{field} is nested deeper than {limit} levels",
                                  {"field": ".".join(where) or "body", "limit": MAX_DEPTH})
    if isinstance(value, str):
        at = unencodable(value)
        if at is not None:
            raise PydanticCustomError("unencodable_text", _surrogate_message(".".join(where) or "body", at))
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(k, [*where, "key"], depth + 1)
            _walk(v, [*where, str(k)], depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _walk(v, [*where, str(i)], depth + 1)


class Body(BaseModel):
    """A JSON request body: every string in it (field values, list items, dict keys, nested values,
    ignored extra fields too) must be valid Unicode, and its nesting at most :data:`MAX_DEPTH` deep."""

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: Any) -> Any:
        _walk(data, [], 0)
        return data


def check_encodable(field: str, value: Any) -> None:
    """400 when ``value`` (a string, or any JSON value) holds text that is not valid Unicode."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    at = unencodable(text)
    if at is not None:
        raise TridentError(_surrogate_message(field, at))


def check_text(field: str, value: Any, limit: int) -> str:
    """The text of ``value`` after the empty, length (413) and encoding (400) checks."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if not text.strip():
        raise TridentError(f"the {field} is empty")
    if len(text) > limit:
        raise HTTPException(413, f"the {field} is {len(text)} characters; the limit is {limit}")
    check_encodable(field, text)
    return text
