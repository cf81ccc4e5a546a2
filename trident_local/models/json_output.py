"""Parse JSON out of model text: backends without constrained decoding need callers to repair.

``parse_json`` finds the first JSON value in text that may carry code fences or
chatter around it; ``schema_errors`` checks the few JSON-schema keywords our
prompts use (type, required, properties, items, enum) without a dependency.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trident_local.errors import ModelOutputError

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_json(text: str) -> Any:
    """The first JSON object or array in ``text``; raises ModelOutputError when there is none."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for cand in candidates:
        for i, ch in enumerate(cand):
            if ch in "{[":
                try:
                    value, _ = decoder.raw_decode(cand, i)
                    return value
                except json.JSONDecodeError:
                    continue
    raise ModelOutputError(f"no JSON value in model output: {text[:200]!r}")


_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Violations of a JSON schema's basic keywords; [] when ``value`` conforms."""
    errs: list[str] = []
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        ok = any(
            isinstance(value, _TYPES.get(x, object))
            and not (x in ("integer", "number") and isinstance(value, bool))
            for x in types
        )
        if not ok:
            return [f"{path}: expected {'/'.join(types)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        errs += [f"{path}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        for k, sub in schema.get("properties", {}).items():
            if k in value:
                errs += schema_errors(value[k], sub, f"{path}.{k}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errs += schema_errors(item, schema["items"], f"{path}[{i}]")
    return errs
