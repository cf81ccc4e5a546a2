"""Region evidence for a claim on one page: the cell (with its row and column headers) or the line that
states each of the claim's values, or the cells a computed value follows from.

A page-level judge answers "does this page support the claim"; a reader wants "where". This check
answers both for claims that state numbers, without a model: each of the claim's values is looked up
in the page's layout (:mod:`trident_local.regions`), and counts as stated only where the row that holds
it (with its column headings and the lines beside it) shares enough of the claim's words
(:data:`MIN_ROW_MATCH`), so a "12" in a footnote does not support "revenue grew 12%". A value the page
does not print is looked for as a difference, sum, ratio or share of two numbers in the rows that
best match the claim (not anywhere on the page: over a whole page of numbers some pair fits almost
any target), only when the claim asks for one ("difference", "ratio", "total", "more than", ...) and
the value is not a whole number under 10, and must give it as precisely as the claim writes it
(95.2: 95.15 to 95.25).

The verdict is "supported" (with the regions) or "unsupported" (no region states it); claims without
a number get "unknown": the check has nothing to locate and the judges decide alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trident_local.regions.layout import YEAR, PageLayout, Region
from trident_local.regions.locate import IDENTIFIER, locate_value, row_scores
from trident_local.regions.locate import numbers as cell_numbers
from trident_local.verify.support_features import numbers
from trident_local.verify.types import SUPPORTED, UNKNOWN, UNSUPPORTED
from trident_local.verify.undecidable import computed_pair

# A value's row must hold this share of the claim's IDF-weighted words (its column headings and the
# lines beside it count at half weight): chosen on the calibration split of the citation benchmark.
MIN_ROW_MATCH = 0.35
OPERAND_ROWS = 6  # a computed value's operands are read from this many best-matching rows
# "<question>? — <answer>" (the claim `ask`'s self-check and the citation benchmark build): the values
# are the answer's; the question's numbers ("in 2019", "the 50-shot setting") are its context
_ANSWER_PART = re.compile(r"\?\s*[—–-]+\s+")
# a value the page does not print is only looked for as a computation when the claim asks for one
_COMPUTES = re.compile(r"\b(differences?|changes?|changed|increase[sd]?|decrease[sd]?|grew|grow(?:s|th|n)?|gap|ratio|"
                       r"times|sum|total|combined|altogether|more|less|fewer|higher|lower|compared?|"
                       r"percentage points?|margin|average|mean|per)\b", re.I)
MIN_COMPUTED = 10  # small whole numbers (counts) follow from some pair of page numbers too easily
# "Table 1", "Figure 3", "Note 13": numbers that name a place in the document, not a value
_NAMED = re.compile(r"\b(?:tables?|figures?|figs?\.?|exhibits?|notes?|sections?|chapters?|items?|appendix|"
                    r"schedules?|parts?)\s+[A-Z]?\d+(?:\.\d+)*\b", re.I)


@dataclass
class RegionCheck:
    """What the page's regions say about a claim: the verdict, the regions that carry it, and how."""

    verdict: str  # supported | unsupported | unknown
    regions: list[Region] = field(default_factory=list)
    how: str = ""

    def region_dicts(self) -> list[dict]:
        return [r.to_dict() for r in self.regions]


def claim_values(claim: str) -> list[str]:
    """The numbers a claim states, years left out unless the claim states nothing else (a year is
    mostly the claim's context, "in 2023", not its value), and so are the numbers of "Table 1",
    of names such as "GPT-4" and, in a "<question>? — <answer>" claim, of the question."""
    parts = _ANSWER_PART.split(claim)
    said = parts[-1] if len(parts) > 1 else claim
    found = list(dict.fromkeys(numbers(IDENTIFIER.sub(" ", _NAMED.sub(" ", said)))))
    values = [n for n in found if not YEAR.match(n)]
    return values or found


def check_claim(lay: PageLayout, claim: str, min_match: float = MIN_ROW_MATCH) -> RegionCheck:
    """Locate each of ``claim``'s values on the page ``lay`` (see the module docstring)."""
    values = claim_values(claim)
    if not values:
        return RegionCheck(UNKNOWN, how="the claim states no number to locate")
    regions: list[Region] = []
    for v in values:
        found, match = locate_value(lay, v, claim)
        if found and match >= min_match:
            regions += [r for r in found if r.bbox not in {o.bbox for o in regions}]
            continue
        computed = _computed(lay, v, claim) if _COMPUTES.search(claim) else None
        if computed is None:
            return RegionCheck(UNSUPPORTED, how=f"{v} is not stated in a row about the claim")
        how, operands = computed
        regions += [r for r in operands if r.bbox not in {o.bbox for o in regions}]
        return RegionCheck(SUPPORTED, regions, f"computed: {v} = {how}")
    return RegionCheck(SUPPORTED, regions, "stated")


def _computed(lay: PageLayout, value: str, claim: str) -> tuple[str, list[Region]] | None:
    """``value`` as a difference, sum, ratio or share of two numbers in the rows that best match the
    claim, with the two operands' cells; None when no pair gives it."""
    try:
        target = float(value)
    except ValueError:
        return None
    if target == int(target) and abs(target) < MIN_COMPUTED:
        return None
    scores = row_scores(lay, claim)
    best = [i for i in sorted(range(len(lay.rows)), key=lambda i: -scores[i])[:OPERAND_ROWS] if scores[i] > 0]
    operands: dict[float, str] = {}
    for i in best:
        for c in lay.rows[i].cells:
            for n in cell_numbers(_NAMED.sub(" ", c.text)):
                if YEAR.match(n):  # a year heads a column; it is not an operand
                    continue
                try:
                    operands.setdefault(float(n), n)
                except ValueError:
                    continue
    decimals = len(value.split(".", 1)[1]) if "." in value else 0
    # as precise as the claim writes it: 95.2 is 95.15-95.25, not anything within 1%
    pair = computed_pair(target, list(operands), tol=0.5 * 10 ** -decimals + 1e-9)
    if pair is None:
        return None
    a, op, b = pair
    cells = [r for x in (a, b) for r in locate_value(lay, operands[x], claim)[0][:1]]
    return f"{operands[a]} {op} {operands[b]}", cells


def cited_region_holds(cited: list[dict], page: int, check: RegionCheck) -> bool | None:
    """None when the claim cited no box on ``page``; else whether a cited box overlaps a region that
    supports it (a claim may cite a row where the check found its cell: that citation holds)."""
    boxes = [tuple(r["bbox"]) for r in cited if r.get("page") == page and len(r.get("bbox", ())) == 4]
    if not boxes:
        return None
    return any(_overlap(b, r.bbox) for b in boxes for r in check.regions)


def _overlap(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])
