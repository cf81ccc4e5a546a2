"""Write the corrected answer from the parsed answer and the per-pair repair decisions.

Text answers: a sentence whose claims all keep their pages is copied exactly as
written (original markers included); a sentence whose claims all lost every page
is dropped; any other cited sentence is rewritten as its claims, each followed by
its new canonical marker ("[p. 4]", "[pp. 4, 6]"). Uncited sentences are copied.

JSON answers: ``claims`` keeps the claims that still cite a page (with their new
pages, and ``regions``: the boxes that state the claim's values on those pages, where
the region check found them, else the regions the claim cited); the others move to
``removed_claims``. The free-text ``answer`` field is
left as given (it is not where the citations live).
"""

from __future__ import annotations

import copy
from typing import Any

from trident_local.verify.parse import ParsedAnswer, format_marker
from trident_local.verify.repair import final_pages
from trident_local.verify.types import ClaimResult


def claim_pages(parsed: ParsedAnswer, results: list[ClaimResult]) -> list[list[int]]:
    """The final pages of each claim of ``parsed`` (same order)."""
    by_claim: dict[str, dict[int, tuple[str, int | None]]] = {}
    for r in results:
        by_claim.setdefault(r.claim.claim_id, {})[r.cited_page] = (r.action, r.new_page)
    return [final_pages(c.pages, by_claim.get(c.claim_id, {})) for c in parsed.claims]


def _rewrite(parsed: ParsedAnswer, si: int, pages: list[list[int]]) -> str | None:
    s = parsed.sentences[si]
    kept = [(parsed.claims[k].text, pages[k]) for k in s.claims if pages[k]]
    if not kept:
        return None
    if all(pages[k] == parsed.claims[k].pages for k in s.claims):
        return s.raw or s.text
    end = s.text[-1] if s.text and s.text[-1] in ".!?" else ""
    parts = [f"{t.rstrip(' .!?;,')} {format_marker(p)}" for t, p in kept]
    return s.prefix + " ".join(parts) + end


def compose(parsed: ParsedAnswer, results: list[ClaimResult]) -> str | dict[str, Any]:
    """The corrected answer: a string for text answers, a dict for JSON answers."""
    pages = claim_pages(parsed, results)
    if parsed.format == "json" and isinstance(parsed.original, dict) and "claims" in parsed.original:
        out = copy.deepcopy(parsed.original)
        found: dict[str, list[dict[str, Any]]] = {}
        for r in results:
            found.setdefault(r.claim.claim_id, []).extend(r.regions)

        def kept(c: Any, p: list[int]) -> dict[str, Any]:
            regions = found.get(c.claim_id) or [r for r in c.regions if r.get("page") in p]
            return {"text": c.text, "pages": p, **({"regions": regions} if regions else {})}

        out["claims"] = [kept(c, p) for c, p in zip(parsed.claims, pages, strict=True) if p]
        removed = [{"text": c.text, "pages": c.pages} for c, p in zip(parsed.claims, pages, strict=True) if not p]
        if removed:
            out["removed_claims"] = removed
        return out
    pieces: list[str] = []
    for si, s in enumerate(parsed.sentences):
        text = (s.raw or s.text) if not s.claims else _rewrite(parsed, si, pages)
        if text is None:
            if pieces and "\n" in s.gap and "\n" not in pieces[-1]:
                pieces[-1] = s.gap
            continue
        pieces += [text, s.gap]
    corrected = "".join(pieces).strip()
    if parsed.format == "json" and isinstance(parsed.original, dict):
        return {**parsed.original, "answer": corrected}
    return corrected
