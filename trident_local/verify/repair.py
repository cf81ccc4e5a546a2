"""The conservative, deterministic repair policy for one (claim, cited page) pair.

| merged verdict on the cited page | a window page is "supported" | action                      |
|----------------------------------|------------------------------|-----------------------------|
| supported                        | (not judged)                 | keep                        |
| inconsistent                     | (not judged)                 | flag (keep, "inconsistent") |
| unknown (judges failed/abstained)| (not judged)                 | flag (keep, "unverified")   |
| unsupported                      | yes                          | fix-page -> that page       |
| unsupported                      | no                           | remove                      |
| partial                          | yes                          | fix-page -> that page       |
| partial                          | no                           | flag (keep, "partial")      |

Window pages are the pages within ``window`` of the cited page, inside the
document (1..n_pages), the cited page excluded. They are judged only to PROPOSE
a page; the pair's verdict is always the one on the cited page. Among several
supported window pages the policy takes the highest support score (no-model
scorer), then the nearest page, then the lower page number. A cited page that
does not exist in the document is "unsupported" (flag "page-out-of-range") and
has no window unless real pages fall within ``window`` of it.

"partial" is not named by the issue's policy; keeping it flagged (instead of
removing it) is the conservative reading: a claim that its page partly states
is not deleted by a verifier that could be wrong.

Before that table, the region check (:mod:`trident_local.verify.regions`): a cited
page with a region that states the claim's values (or the cells it is computed
from) keeps the citation whatever the page-level verdict, pointed at that region:
"keep" when the claim cited no region of the page or one that overlaps it,
"fix-region" when it cited another region of the page (the citation moves on the
same page, before any page is changed). A page-level verdict other than
"supported" is then flagged "region-supported", so a reader sees that the value
was found where the judges did not find the claim. An "inconsistent" page (the two
channels disagree) stays flagged for a reader, with the regions attached. In the window, a page whose
regions state the claim counts as "supported".
"""

from __future__ import annotations

from trident_local.verify.types import (
    FIX_PAGE,
    FIX_REGION,
    FLAG,
    INCONSISTENT,
    KEEP,
    PARTIAL,
    REMOVE,
    SUPPORTED,
    UNKNOWN,
    UNSUPPORTED,
)


def window_pages(page: int, n_pages: int, window: int) -> list[int]:
    """Pages within ``window`` of ``page`` that exist (1..n_pages), ``page`` itself excluded, nearest first."""
    if window < 0:
        raise ValueError("window must be >= 0")
    cands = [p for p in range(page - window, page + window + 1) if p != page and 1 <= p <= n_pages]
    return sorted(cands, key=lambda p: (abs(p - page), p))


def needs_window(verdict: str) -> bool:
    """Is the window judged for this cited-page verdict (only to propose a page)?"""
    return verdict in (UNSUPPORTED, PARTIAL)


def region_decision(verdict: str, region_verdict: str | None, cited_region_holds: bool | None
                    ) -> tuple[str, list[str]] | None:
    """(action, flags) when the cited page's regions state the claim, else None (the page policy decides).

    ``cited_region_holds``: None when the claim cited no region of this page, else whether one of the
    boxes it cited overlaps a supporting region.
    """
    if region_verdict != SUPPORTED or verdict == INCONSISTENT:  # two judges disagree: a reader should look
        return None
    flags = [] if verdict == SUPPORTED else ["region-supported"]
    return (FIX_REGION if cited_region_holds is False else KEEP), flags


def decide(
    verdict: str,
    cited_page: int,
    window_verdicts: dict[int, str] | None = None,
    window_scores: dict[int, float | None] | None = None,
) -> tuple[str, int | None, list[str]]:
    """(action, new_page, flags) for one pair from its cited-page verdict and its window's verdicts."""
    if verdict == SUPPORTED:
        return KEEP, None, []
    if verdict == INCONSISTENT:
        return FLAG, None, ["inconsistent"]
    if verdict == UNKNOWN:
        return FLAG, None, ["unverified"]
    if verdict not in (UNSUPPORTED, PARTIAL):
        raise ValueError(f"unknown verdict {verdict!r}")
    scores = window_scores or {}
    supported = [p for p, v in (window_verdicts or {}).items() if v == SUPPORTED and p != cited_page]
    if supported:
        best = min(supported, key=lambda p: (-(scores.get(p) or 0.0), abs(p - cited_page), p))
        return FIX_PAGE, best, []
    if verdict == PARTIAL:
        return FLAG, None, ["partial"]
    return REMOVE, None, []


def final_pages(cited: list[int], decisions: dict[int, tuple[str, int | None]]) -> list[int]:
    """The pages a claim cites after repair: kept and flagged pages stay, fixed pages move, removed go.

    ``decisions`` maps each cited page to (action, new_page); order follows ``cited``, duplicates dropped.
    """
    out: list[int] = []
    for p in cited:
        action, new = decisions.get(p, (KEEP, None))
        if action in (KEEP, FLAG, FIX_REGION):
            out.append(p)
        elif action == FIX_PAGE and new is not None:
            out.append(new)
    return list(dict.fromkeys(out))
