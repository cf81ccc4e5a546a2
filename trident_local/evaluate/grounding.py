"""Grounding: do the regions handed out (search hits' rows, answer citations' cells) cover the evidence?

Labels come from public QA data with no box annotation: a question is kept when its gold answer
(numbers normalised: "$5409.00" finds "5,409") occurs one to three times on its gold pages; each
occurrence's cell (a PyMuPDF text line) is a gold box. A FinanceBench answer computed from line
items (its justification names them: "... a single line item named: Total current liabilities.")
is labelled instead by the table rows of those line items on the gold pages (a "row" gold box).
Scores, per question:

- ``hit``: a returned region no bigger than an eighth of the page contains a gold box's centre
  (search: any of the top-K hits; answers: any citation of the answer); for a row gold box, a
  region whose centre lies in the row (a cell of it) also points at it;
- ``iou``: the best intersection-over-union between a returned region and a gold box (0 if none);
- ``page_share``: the share of the page the regions on that page cover, averaged over the pages
  that carry regions (how much a reader is asked to look at).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trident_local.evaluate.mmlongbench import QARecord
from trident_local.regions.attach import layout_of
from trident_local.regions.layout import BBox, PageLayout
from trident_local.regions.locate import numbers
from trident_local.search import search

if TYPE_CHECKING:
    from trident_local.index import Index

MAX_SHARE = 1 / 8  # a region bigger than this share of the page does not count as pointing at anything
MAX_OCCURRENCES = 3


_LINE_ITEM = re.compile(r"line item named:\s*(.+?)\.(?=\s|$)")


@dataclass
class GoldBox:
    page: int
    bbox: BBox
    kind: str = "value"  # "value": the cell that holds the answer; "row": a line item's table row


@dataclass
class GroundingRow:
    qid: int
    doc: str
    answer: str
    gold: list[GoldBox]
    search: dict[str, float] = field(default_factory=dict)
    answer_scores: dict[str, float] = field(default_factory=dict)


def occurrences(lay: PageLayout, answer: str) -> list[BBox]:
    """Cells of the page that hold ``answer``: its first number where it states one, else the text."""
    want = numbers(answer)
    key = " ".join(answer.lower().split())
    out = []
    for r in lay.rows:
        for c in r.cells:
            found = (want[0] in numbers(c.text)) if want else (len(key) >= 3 and key in " ".join(c.text.lower().split()))
            if found:
                out.append(c.bbox)
    return out


def _squash(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def line_items(justification: str) -> list[str]:
    """The line items a FinanceBench justification names ("... named: Cost of sales.")."""
    text = justification.replace("\u00c2\u00a0", " ").replace("\u00a0", " ")  # the dataset's mis-decoded spaces
    return list(dict.fromkeys(m.group(1).strip() for m in _LINE_ITEM.finditer(text)))


def line_item_rows(lay: PageLayout, name: str) -> list[BBox]:
    """Table rows of the page whose label is the line item ``name`` (spaces and punctuation ignored:
    filings' text layers often run words together)."""
    want = _squash(name)
    return [r.bbox for r in lay.rows if r.is_table_row and want and _squash(r.cells[0].text) == want]


def gold_boxes(index: Index, rec: QARecord) -> list[GoldBox]:
    """The answer's occurrences on its gold pages, or else the rows of the line items it was computed
    from; [] where neither is found, or where one occurs more than three times."""
    ans = rec.answer.strip()
    if not ans or len(ans) > 60:
        return []
    lays = {p: layout_of(index, rec.doc_id, p) for p in rec.evidence_pages}
    boxes = [GoldBox(p, b) for p, lay in lays.items() for b in occurrences(lay, ans)]
    if 1 <= len(boxes) <= MAX_OCCURRENCES:
        return boxes
    rows = []
    for name in line_items(rec.justification) if not boxes else []:
        found = [GoldBox(p, b, "row") for p, lay in lays.items() for b in line_item_rows(lay, name)]
        if len(found) > MAX_OCCURRENCES:
            return []
        rows += found
    return rows


def iou(a: BBox, b: BBox) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _contains(box: BBox, point: tuple[float, float]) -> bool:
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def score_regions(regions: Sequence[dict], gold: Sequence[GoldBox], page_area: Callable[[int], float]) -> dict:
    """hit / iou / page_share of ``regions`` (dicts with page and bbox) against the gold boxes."""
    hit, best, shares = 0.0, 0.0, {}
    for r in regions:
        b, area = tuple(r["bbox"]), page_area(r["page"])
        size = (b[2] - b[0]) * (b[3] - b[1])
        shares[r["page"]] = shares.get(r["page"], 0.0) + (size / area if area else 0.0)
        for g in gold:
            if g.page != r["page"]:
                continue
            best = max(best, iou(b, g.bbox))
            centre = ((g.bbox[0] + g.bbox[2]) / 2, (g.bbox[1] + g.bbox[3]) / 2)
            inside = g.kind == "row" and _contains(g.bbox, ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2))
            if area and size <= MAX_SHARE * area and (_contains(b, centre) or inside):
                hit = 1.0
    share = sum(min(1.0, s) for s in shares.values()) / len(shares) if shares else 0.0
    return {"hit": hit, "iou": best, "page_share": share}


def run_grounding(
    index: Index,
    records: Sequence[QARecord],
    *,
    pool: str = "fused",
    k: int = 5,
    answers: bool = True,
    min_confidence: float = 0.0,
    on_row: Callable[[GroundingRow], None] | None = None,
) -> list[GroundingRow]:
    """Label each record, then score the search hits' regions and (``answers``) the answer's."""
    from trident_local.generate.ask import AskOptions, ask
    from trident_local.query import Query

    rows = []
    for rec in records:
        if not rec.answerable or not rec.evidence_pages:
            continue
        gold = gold_boxes(index, rec)
        if not gold:
            continue
        row = GroundingRow(rec.qid, rec.doc_name, rec.answer, gold)

        def area(page: int, _doc=rec.doc_id) -> float:
            p = index.store.document(_doc).page(page)
            return p.width * p.height

        regs = [r.to_dict() for found in search(index, rec.question, pool=pool, doc=[rec.doc_id], k=k)
                for r in found.regions]
        row.search = score_regions(regs, gold, area)
        if answers:
            res = ask(index, Query(rec.question, min_confidence=min_confidence), AskOptions(pool=pool),
                      doc=[rec.doc_id])
            cites = [r for c in res.answer.citations for r in c.regions]
            row.answer_scores = score_regions(cites, gold, area)
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def summarize(rows: Sequence[GroundingRow]) -> dict[str, float]:
    out: dict[str, float] = {"n": len(rows)}
    for part in ("search", "answer_scores"):
        scored = [getattr(r, part) for r in rows if getattr(r, part)]
        if scored:
            name = "search" if part == "search" else "answer"
            for key in ("hit", "iou", "page_share"):
                out[f"{name}_{key}"] = sum(s[key] for s in scored) / len(scored)
    return out
