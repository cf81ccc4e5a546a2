"""An answer a person can read at a glance: the value with its unit and where it sits ("95.2 million
dollars: Coastal, 2023, Table 1, p. 2"), written from the regions of the cell that holds it.

The unit is what the table says its numbers are in: a parenthesised unit in the table's caption or
column headings ("(million dollars)", "($ in millions)"); the place is the cell's row and column
headers and the caption's name ("Table 1", "Exhibit 4"). Nothing is inferred that the page does not
print: a value without a unit on the page gets none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from trident_local.regions.layout import PageLayout

_CAPTION = re.compile(r"^\s*((?:Table|Exhibit|Figure|Schedule|Chart)\s+[\w.-]+)", re.I)
_UNIT = re.compile(r"\(([^()]*\b(?:millions?|billions?|thousands?|dollars|euros?|percent|USD|EUR|GBP|%)\b[^()]*)\)",
                   re.I)
CAPTION_ROWS = 4  # the caption is at most this many rows above the table's column headings


def _row_of(lay: PageLayout, bbox: Sequence[float]) -> int | None:
    for i, r in enumerate(lay.rows):
        for c in r.cells:
            if all(abs(a - b) < 0.2 for a, b in zip(c.bbox, bbox, strict=True)):
                return i
    return None


def _caption(lay: PageLayout, top: int) -> tuple[str, str]:
    """(name, unit) from the lines just above row ``top`` (the column headings)."""
    name, unit = "", ""
    for r in reversed(lay.rows[max(0, top - CAPTION_ROWS):top + 1]):
        text = r.text
        if not unit and (m := _UNIT.search(text)):
            unit = " ".join(m.group(1).split())
        if not name and (m := _CAPTION.match(text)):
            name = m.group(1).rstrip(":.")
    return name, unit


def located_answer(lay: PageLayout, regions: Sequence[dict], value: str) -> str:
    """``value`` with its unit and place, from the cell / row-header / column-header regions of one page;
    "" when the regions hold no cell (a value in running text reads well as it is)."""
    by_kind = {r["kind"]: r for r in regions}
    cell = by_kind.get("cell")
    if cell is None:
        return ""
    head = by_kind.get("column-header")
    top = _row_of(lay, head["bbox"]) if head else _row_of(lay, cell["bbox"])
    name, unit = _caption(lay, top) if top is not None else ("", "")
    unit = "" if "%" in value or "%" in cell["text"] else unit  # a share is not in the table's money unit
    place = [r["text"] for r in (by_kind.get("row-header"), head) if r] + ([name] if name else [])
    return f"{value}{' ' + unit if unit else ''}: {', '.join(place + [f'p. {lay.page}'])}"
