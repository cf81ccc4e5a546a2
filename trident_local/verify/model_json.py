"""Model output is untrusted input: strict JSON parsing with only safe repairs.

Repairs allowed (each one keeps the model's own words, never guesses):

1. strip a Markdown code fence (```json ... ```);
2. parse the whole reply as JSON;
3. otherwise take the first balanced ``{...}`` object in the reply (quotes and
   escapes respected) and parse that.

Anything else (truncated JSON, single quotes, trailing commas) is an error that
the caller records; it then falls back to its conservative default.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trident_local.verify.types import JUDGE_VERDICTS, PARTIAL, SUPPORTED, UNKNOWN, UNSUPPORTED

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.S)


def first_json_object(text: str) -> str | None:
    """The first balanced ``{...}`` substring of ``text`` (string-aware), or None."""
    start = text.find("{")
    while start != -1:
        depth, in_str, esc = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def extract_json_object(text: str) -> dict[str, Any]:
    """A JSON object from a model reply, after the safe repairs above; ValueError otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty output")
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        candidate = first_json_object(body)
        if candidate is None:
            raise ValueError("no JSON object in the output") from None
        try:
            obj = json.loads(candidate)
        except json.JSONDecodeError as e:
            raise ValueError(f"invalid JSON object ({e.msg})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


# Spellings of the three verdicts that are safe to normalise (same meaning, other form).
_SYNONYMS = {
    "supported": SUPPORTED,
    "fully supported": SUPPORTED,
    "partial": PARTIAL,
    "partially supported": PARTIAL,
    "partly supported": PARTIAL,
    "unsupported": UNSUPPORTED,
    "not supported": UNSUPPORTED,
}


def normalise_verdict(value: Any) -> str | None:
    """One of JUDGE_VERDICTS, or None when ``value`` is not a recognised verdict."""
    if not isinstance(value, str):
        return None
    v = re.sub(r"[\s_\-]+", " ", value.strip().lower()).strip(" .!\"'")
    out = _SYNONYMS.get(v)
    return out if out in JUDGE_VERDICTS else None


def parse_verdict(text: str, max_rationale: int = 400) -> tuple[str, str, str | None]:
    """(verdict, rationale, error) from a judge's reply.

    A reply that is not a JSON object with a known ``verdict`` gives
    ``("unknown", "", error)``: the caller never invents a verdict.
    """
    try:
        obj = extract_json_object(text)
    except ValueError as e:
        return UNKNOWN, "", f"unparseable judge output: {e}"
    verdict = normalise_verdict(obj.get("verdict"))
    rationale = obj.get("rationale", "")
    rationale = rationale.strip()[:max_rationale] if isinstance(rationale, str) else ""
    if verdict is None:
        return UNKNOWN, rationale, f"unknown verdict {str(obj.get('verdict'))[:40]!r}"
    return verdict, rationale, None
