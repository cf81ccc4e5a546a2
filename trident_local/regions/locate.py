"""Where on a page the evidence sits: the rows that best match a question, the cell that holds a value
with its row and column headers, and the regions that carry an answer's claims. No generative model:
matching words and numbers against the page's layout (:mod:`trident_local.regions.layout`), and for a
search hit's rows also the text embedder's cosine."""

from __future__ import annotations

import re
from collections.abc import Sequence

from trident_local.regions.layout import Cell, PageLayout, Region, Row
from trident_local.text import answer_type, idf_table, terms, weighted_overlap

_NUMBER = re.compile(r"\(?-?\$?\d[\d,]*(?:\.\d+)?%?\)?")
# "GPT-4", "Vicuna-13B", "level-2", "Figure 3-8", "10-K", "12/31/2018": names and dates, whose digits are
# not values ("4" is not in "GPT-4")
IDENTIFIER = re.compile(r"[^\s\d(),;:]*[A-Za-z][^\s(),;:]*\d[^\s(),;:]*|\d+[-–]?[A-Za-z]\w*|\d+(?:[-–/]\d+)+")
# A table row (a label and values) outranks a line of prose sharing as many of the question's words:
# the questions a page is searched for mostly ask for values, and a heading repeats the question's
# topic words without holding the value. 4.0 over 1.5: search region hit@5 0.348 -> 0.427 on the calib
# half of the MMLongBench-Doc document split, 0.609 either way on the FinanceBench dev labels
# (`trident eval grounding` before and after; docs/TRIDENT.md).
TABLE_ROW_BOOST = 4.0
HEADER_WEIGHT = 0.5
# A question that asks for a number is answered by a row that prints one: a row without a digit counts at
# this share of its score (search region hit@5 +0.01 on both halves of the MMLongBench-Doc split, 0.25
# the same; FinanceBench unchanged). The question's own numbers ("in 2010") are not the answer's: a row
# that prints only those counts as printing none (calib half and FinanceBench unchanged, test half +0.01).
NO_NUMBER_WEIGHT = 0.5
# A search hit's rows also score by their embedding cosine with the question, at this weight (calib half of
# the MMLongBench-Doc split: region hit@5 0.543 -> 0.600; 0.05-0.3 give 0.59-0.60 there; FinanceBench
# unchanged up to 0.5, lower above 1)
ROW_COSINE_WEIGHT = 0.1
PASSAGE_WORDS = 8  # an answer this long is a quoted passage, not a value
PASSAGE_LINES = 6  # a passage is at most a few sentences (60 words)
PASSAGE_CONTAINED = 0.9
PASSAGE_EDGE = 4
NEIGHBOUR_WEIGHT = 0.5


def norm_number(s: str) -> str:
    """One spelling per number: "$1,577.00", "(1,577)" and "1577" read "1577"; "95.20" reads "95.2"."""
    t = s.strip().strip("()$%").replace(",", "").replace("$", "")
    if "." in t:
        t = t.rstrip("0").rstrip(".")
    return t.lstrip("-") or s


def printed_numbers(text: str) -> list[str]:
    """The numbers written in ``text`` as printed ("(1,174)", "$2,672", "8.7%"), in order; digits that
    are part of a name or date ("GPT-4", "10-K") are not numbers."""
    return [m.group() for m in _NUMBER.finditer(IDENTIFIER.sub(" ", text))]


def numbers(text: str) -> list[str]:
    """The numbers written in ``text``, normalised, in order, without repeats."""
    out = [norm_number(n) for n in printed_numbers(text)]
    return list(dict.fromkeys(n for n in out if any(ch.isdigit() for ch in n)))


def _cell_numbers(c: Cell) -> set[str]:
    return set(numbers(c.text))


def _region(lay: PageLayout, bbox, kind: str, text: str) -> Region:
    return Region(lay.page, tuple(bbox), kind, text)


def _header_above(lay: PageLayout, row_i: int) -> Row | None:
    """The nearest column-header row above a table row (within its table: prose ends the search)."""
    for r in reversed(lay.rows[max(0, row_i - 40):row_i]):
        if r.is_header_row:
            return r
        if not r.is_table_row and len(r.cells) == 1 and (r.bbox[2] - r.bbox[0]) > 0.5 * lay.width:
            return None
    return None


def row_scores(lay: PageLayout, query: str, table_boost: float = TABLE_ROW_BOOST) -> list[float]:
    """Per row, the share of the question's IDF mass it holds; a table row also reads its column
    headings, at HEADER_WEIGHT (a value's row names the item, its column the year or measure), and
    is multiplied by ``table_boost`` (to rank rows; 1 to read the score as a share)."""
    q = terms(query)
    row_terms = lay.row_terms
    at = {id(r): i for i, r in enumerate(lay.rows)}
    idf = idf_table(row_terms)
    default = max(idf.values(), default=1.0)
    mass = sum(idf.get(w, default) for w in set(q)) or 1.0
    out = []
    for i, (r, t) in enumerate(zip(lay.rows, row_terms, strict=True)):
        s = weighted_overlap(q, t, idf, default)
        if r.is_table_row:
            head = _header_above(lay, i)
            if head is not None:
                only_head = set(row_terms[at[id(head)]]) - set(t)
                s += HEADER_WEIGHT * sum(idf.get(w, default) for w in set(q) if w in only_head) / mass
            s *= table_boost
        out.append(s)
    if NEIGHBOUR_WEIGHT:  # a sentence runs over lines: a line also reads the lines just above and below
        own = list(out)
        prose = [len(r.cells) == 1 for r in lay.rows]
        for i in range(len(lay.rows)):
            if prose[i]:
                near = [own[j] for j in (i - 1, i + 1) if 0 <= j < len(own) and prose[j]]
                out[i] += NEIGHBOUR_WEIGHT * max(near, default=0.0)
    return out


def row_region(lay: PageLayout, row: Row) -> Region:
    return _region(lay, row.bbox, "row" if row.is_table_row else "line", row.text)


def question_regions(lay: PageLayout, question: str, n: int = 3, *, numbers_first: bool = False) -> list[Region]:
    """The ``n`` rows (table rows or lines of text) sharing the most of the question's rarer words; with
    ``numbers_first``, for a question that asks for a number, a row that prints none counts at
    NO_NUMBER_WEIGHT (a search hit's rows; an answer's words are located as they are)."""
    if not lay.rows:
        return []
    scores = question_row_scores(lay, question, numbers_first=numbers_first)
    best = sorted(range(len(lay.rows)), key=lambda i: -scores[i])[:n]
    return [row_region(lay, lay.rows[i]) for i in best if scores[i] > 0]


def question_row_scores(lay: PageLayout, question: str, *, numbers_first: bool = False,
                        similarity: Sequence[float] | None = None) -> list[float]:
    """:func:`row_scores` as :func:`question_regions` ranks rows (``numbers_first``: for a question that
    asks for a number, a row that prints none but the question's own, "in 2010", counts at NO_NUMBER_WEIGHT).
    ``similarity``: each row's embedding cosine with the question, added at ROW_COSINE_WEIGHT (boosted as
    the row's words are): a chart's value label or a row that names the item in other words shares
    few of the question's words."""
    scores = row_scores(lay, question)
    if similarity is not None:
        scores = [s + ROW_COSINE_WEIGHT * max(0.0, c) * (TABLE_ROW_BOOST if r.is_table_row else 1.0)
                  for s, c, r in zip(scores, similarity, lay.rows, strict=True)]
    if numbers_first and answer_type(question) == "numeric":
        own = set(numbers(question))
        scores = [s if set(numbers(r.text)) - own else s * NO_NUMBER_WEIGHT
                  for s, r in zip(scores, lay.rows, strict=True)]
    return scores


def _column_header(lay: PageLayout, row_i: int, cell: Cell) -> Cell | None:
    """The nearest cell above ``cell`` in its column that is a label or a year, not another value."""
    x0, x1 = cell.bbox[0], cell.bbox[2]
    for r in reversed(lay.rows[max(0, row_i - 40):row_i]):
        if len(r.cells) == 1 and (r.cells[0].bbox[2] - r.cells[0].bbox[0]) > 0.5 * lay.width:
            return None  # a line of prose: the table (if any) ended
        for c in r.cells:
            if min(x1, c.bbox[2]) - max(x0, c.bbox[0]) > 0:
                label = not c.numeric and sum(ch.isalnum() for ch in c.text) >= 2  # not a dash or a "$"
                if label or (c.numeric and not c.value):  # a year heading its column
                    return c
                break
    return None


def value_regions(lay: PageLayout, value: str, question: str = "") -> list[Region]:
    """The cell holding ``value`` (a number, or a short string), with its row header and column header
    as extra regions; where it occurs more than once, the occurrence whose row best matches the question."""
    return locate_value(lay, value, question)[0]


def locate_value(lay: PageLayout, value: str, question: str = "") -> tuple[list[Region], float]:
    """:func:`value_regions` and how well the chosen occurrence's row (with its column headings and the
    lines beside it) matches ``question``: the share of the question's IDF mass, 0 where absent."""
    want = numbers(value)
    key = " ".join(value.lower().split())
    hits: list[tuple[int, Cell]] = []
    for i, r in enumerate(lay.rows):
        for c in r.cells:
            if (want and want[0] in _cell_numbers(c)) or (not want and key and key in c.text.lower()):
                hits.append((i, c))
    if not hits:
        return [], 0.0
    scores = row_scores(lay, question, table_boost=1.0) if question else [0.0] * len(lay.rows)
    row_i, cell = max(hits, key=lambda h: scores[h[0]])
    row = lay.rows[row_i]
    if not row.is_table_row:  # a value in running text: its line is the region
        return [_region(lay, cell.bbox, "line", cell.text)], scores[row_i]
    out = [_region(lay, cell.bbox, "cell", cell.text)]
    label = row.cells[0]
    if label is not cell and not label.numeric:
        out.append(_region(lay, label.bbox, "row-header", label.text))
    head = _column_header(lay, row_i, cell)
    if head is not None:
        out.append(_region(lay, head.bbox, "column-header", head.text))
    return out, scores[row_i]


def passage_regions(lay: PageLayout, passage: str, most: int = PASSAGE_LINES) -> list[Region]:
    """The lines (or table rows) of the page that a quoted passage runs over, at most ``most``, in page
    order: rows of at least three words nearly all of which (PASSAGE_CONTAINED) are the passage's, and
    next to them the lines where it starts or ends mid-line (the line's last, or first, PASSAGE_EDGE
    words are the passage's, in order); a passage within two lines is those two lines."""
    said_words = re.findall(r"\w+", passage.lower())
    said, flat = set(said_words), f" {' '.join(said_words)} "
    words = [re.findall(r"\w+", r.text.lower()) for r in lay.rows]

    def inside(i: int) -> bool:
        w = words[i]
        return len(w) >= 3 and sum(x in said for x in w) >= PASSAGE_CONTAINED * len(w)

    def edge(i: int, last: bool) -> bool:  # the passage starts in line i (its last words) or ends there
        w = words[i] if 0 <= i < len(words) else []
        part = w[-PASSAGE_EDGE:] if last else w[:PASSAGE_EDGE]
        return len(w) > PASSAGE_EDGE and f" {' '.join(part)} " in flat

    core = [i for i in range(len(lay.rows)) if inside(i)]
    if not core:
        core = [i for i in range(len(lay.rows) - 1) if edge(i, True) and edge(i + 1, False)][:1]
        core = core + [core[0] + 1] if core else []
    picked = set(core)
    for i in core:
        if i - 1 not in picked and edge(i - 1, True):
            picked.add(i - 1)
        if i + 1 not in picked and edge(i + 1, False):
            picked.add(i + 1)
    return [row_region(lay, lay.rows[i]) for i in sorted(picked)[:most]]


def answer_regions(lay: PageLayout, answer: str, question: str, n: int = 2) -> list[Region]:
    """Regions that carry ``answer`` on this page: for a quoted passage (an answer of PASSAGE_WORDS
    words or more: the no-model answer to an open question), the lines it runs over; else the cells
    of the numbers it states (each with its headers; none where the page lacks them), else the rows
    sharing most of its words (the question's words break ties)."""
    if len(answer.split()) >= PASSAGE_WORDS and (lines := passage_regions(lay, answer)):
        return lines
    out: list[Region] = []
    stated = numbers(answer)[:3]
    for num in stated:
        found = value_regions(lay, num, question)
        if found:
            out += [r for r in found if r.bbox not in {o.bbox for o in out}]
    if out or stated:  # a page without the numbers the answer states does not carry it
        return out
    return question_regions(lay, f"{answer} {answer} {question}", n)
