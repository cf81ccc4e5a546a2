"""Row/column lookup in the tables of a page, borderless tables included.

Ingestion stores a ruled table's cells as "a | b | c" lines; a table drawn
without rules is kept only by its caption, and its cells are rebuilt here from
the text blocks next to the caption with the same routine the evidence trace
uses (:func:`trident_local.trace.evidence.block_table`). A question names a
row ("Coastal") and a column ("2023"); the cell under the best-matching row and
column is the answer, with the row it comes from as its support.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trident_local.docs.model import Page
from trident_local.text import terms

UNNAMED_PENALTY = 0.5  # a row label's words the question does not say, against those it says


@dataclass
class Table:
    """A table of a page: its label and caption, header cells and body rows (cells as text)."""

    page: int
    label: str
    caption: str
    header: list[str]
    rows: list[list[str]]

    @property
    def title(self) -> str:
        if self.label and self.caption.startswith(self.label):
            return self.caption
        return " ".join(x for x in (self.label, self.caption) if x) or "table"

    def row_text(self, i: int) -> str:
        """One body row as a readable line under its header: 'Table 1 ...: Coastal | 2022 74.5 | 2023 95.2'."""
        row = self.rows[i]
        if len(row) == len(self.header):
            cells = [row[0]] + [f"{h} {c}".strip() for h, c in zip(self.header[1:], row[1:], strict=True)]
        else:
            cells = row
        return f"{self.title}: " + " | ".join(cells)


@dataclass
class CellMatch:
    """The cell under the row and column a question names, and how well each matched (shares of terms)."""

    table: Table
    row: int  # index into table.rows
    col: int  # index into the header
    value: str
    row_score: float
    col_score: float

    @property
    def support(self) -> str:
        return self.table.row_text(self.row)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split(" | ")]


def page_tables(page: Page) -> list[Table]:
    """The tables of a page with their cells; caption-only (borderless) tables rebuilt from word blocks."""
    from trident_local.trace.evidence import block_table

    out = []
    for o in page.objects:
        if o.type != "table":
            continue
        text = o.text if o.text.strip(" |\n") else (block_table(page, o.bbox) if o.caption else "")
        lines = [ln for ln in text.splitlines() if ln.strip(" |")]
        if len(lines) < 2:
            continue
        out.append(Table(page.number, o.label, o.caption, _cells(lines[0]), [_cells(ln) for ln in lines[1:]]))
    return out


def _masses(question_terms: set[str], cell: str, idf: dict[str, float]) -> tuple[float, float]:
    """IDF mass of the cell's terms that the question holds, and of those it does not."""
    t = set(terms(cell))
    said = sum(idf.get(x, 1.0) for x in t if x in question_terms)
    return said, sum(idf.get(x, 1.0) for x in t) - said


def _match(question_terms: set[str], cell: str, idf: dict[str, float]) -> float:
    """IDF mass of the cell's terms that the question holds, over the cell's mass (0..1)."""
    return _share(*_masses(question_terms, cell, idf))


def _share(said: float, unsaid: float) -> float:
    return said / (said + unsaid) if said + unsaid else 0.0


def _named(said: float, unsaid: float) -> float:
    """How much of the question a row label names: the mass of its terms the question holds, less
    UNNAMED_PENALTY times the mass of those it does not ("PaLM-2L + Step-Back (ours)" names more of
    "What did PaLM-2L + Step-Back achieve ...?" than "PaLM-2L" does, which names nothing else)."""
    return said - UNNAMED_PENALTY * unsaid if said else 0.0


def lookup(table: Table, question: str, idf: dict[str, float] | None = None) -> CellMatch | None:
    """The cell under the row label and the column header the question names; None unless both match.

    A table whose question names only a column and has a single body row, or names only a row and has a
    single value column, still answers.
    """
    q = set(terms(question))
    idf = idf or {}
    n = len(table.header)
    if n < 2 or not table.rows:
        return None
    col_scores = [_match(q, h, idf) for h in table.header[1:]]
    rows = [(i, r) for i, r in enumerate(table.rows) if len(r) == n]
    if not rows:
        return None
    masses = [(_masses(q, r[0], idf), i) for i, r in rows]
    row_scores = [(_share(*m), _named(*m), i) for m, i in masses]
    best_row_score, _, best_row = max(row_scores, key=lambda x: (x[1], x[0], -x[2]))
    best_col_score = max(col_scores)
    col = 1 + col_scores.index(best_col_score)
    if best_col_score == 0 and n == 2:
        col, best_col_score = 1, 0.5  # one value column: the question need not name it
    if best_row_score == 0 and len(rows) == 1:
        best_row, best_row_score = rows[0][0], 0.5
    if best_row_score == 0 or best_col_score == 0:
        return None
    value = table.rows[best_row][col]
    if not value:
        return None
    return CellMatch(table, best_row, col, value, best_row_score, best_col_score)


def best_cell(tables: Sequence[Table], question: str, idf: dict[str, float] | None = None) -> CellMatch | None:
    """The best row/column match over several tables (tables given best page first break ties)."""
    found = [m for t in tables if (m := lookup(t, question, idf)) is not None]
    if not found:
        return None
    return max(found, key=lambda m: m.row_score + m.col_score)
