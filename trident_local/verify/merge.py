"""Merge the text and image channels' verdicts on one (claim, page) pair.

Truth table (T = text, I = image; "-" = channel absent or "unknown"):

| T \\ I        | supported    | partial     | unsupported  | -           |
|--------------|--------------|-------------|--------------|-------------|
| supported    | supported    | partial*    | inconsistent | supported   |
| partial      | supported*   | partial     | unsupported* | partial     |
| unsupported  | inconsistent | partial*    | unsupported  | unsupported |
| -            | supported    | partial     | unsupported  | unknown     |

Agreement gives that verdict; a hard conflict (one channel "supported", the other
"unsupported") gives "inconsistent"; a soft conflict (one side "partial") is
settled by the image channel (*). A missing or failed channel defers to the other;
two failed channels give "unknown".
"""

from __future__ import annotations

from trident_local.verify.types import (
    INCONSISTENT,
    JUDGE_VERDICTS,
    SUPPORTED,
    UNKNOWN,
    UNSUPPORTED,
    Judgement,
)


def _usable(j: Judgement | None) -> str | None:
    return j.verdict if j is not None and j.verdict in JUDGE_VERDICTS else None


def merge(text: Judgement | None, image: Judgement | None) -> tuple[str, list[str]]:
    """(merged verdict, flags) for one pair; flags name conflicts and failed channels."""
    flags = [f"{j.channel}-judge-error" for j in (text, image) if j is not None and _usable(j) is None]
    t, i = _usable(text), _usable(image)
    if t is None and i is None:
        return UNKNOWN, flags
    if t is None or i is None:
        return (t or i), flags  # type: ignore[return-value]
    if t == i:
        return t, flags
    if {t, i} == {SUPPORTED, UNSUPPORTED}:
        return INCONSISTENT, [*flags, "hard-conflict"]
    return i, [*flags, "soft-conflict-image-wins"]
