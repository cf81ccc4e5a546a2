"""Judge replies: the verdict in a model reply, normalised, or "unknown" with the reason.

JSON is parsed by :mod:`trident_local.models.structured` (strict, safe repairs
only: a code fence stripped, chatter around the object dropped); truncated
JSON, single quotes or trailing commas are errors the caller records, then it
falls back to its conservative default.
"""

from __future__ import annotations

import re
from typing import Any

from trident_local.errors import ModelOutputError
from trident_local.models.structured import parse_object
from trident_local.verify.types import JUDGE_VERDICTS, PARTIAL, SUPPORTED, UNKNOWN, UNSUPPORTED

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
        obj, _ = parse_object(text)
    except ModelOutputError as e:
        return UNKNOWN, "", f"unparseable judge output: {e}"
    verdict = normalise_verdict(obj.get("verdict"))
    rationale = obj.get("rationale", "")
    rationale = rationale.strip()[:max_rationale] if isinstance(rationale, str) else ""
    if verdict is None:
        return UNKNOWN, rationale, f"unknown verdict {str(obj.get('verdict'))[:40]!r}"
    return verdict, rationale, None
