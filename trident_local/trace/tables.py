"""Evidence tables as rows of cells: read an ingested table's text, undo detector merges, find header rows.

Ingested tables are stored as "a | b | c" lines; a detector working on a table without inner rules
sometimes merges rows or sub-columns into one cell, which :func:`split_merged` undoes.
"""

from __future__ import annotations

import re


def parse_table(text: str) -> list[list[str]]:
    """Rows of an ingested table's text ("a | b | c" per line), with merged cells split where the detector
    merged them (see :func:`split_merged`)."""
    return split_merged([[c.strip() for c in ln.split(" | ")] for ln in text.splitlines() if ln.strip()])


def split_merged(rows: list[list[str]]) -> list[list[str]]:
    """Undo two merges a table detector makes when a table has no inner rules.

    Rows merged into one ("BM25 DPR RAPTOR | 57.3 60.4 62.4"): every cell of a body row holds the same number
    k > 1 of space-separated items and all but the first are numbers: the row becomes k rows.
    Sub-columns merged into one ("PrOntoQA | 47.40 67.80 61.00 | ..."): a column whose body cells all hold
    the same number k > 1 of numbers becomes k columns; a header row with k words there is split too, and the
    spanning header above is repeated over the new columns ("GPT-4 (gpt-4) Logic-LM").
    """
    if len(rows) < 2:
        return rows
    out: list[list[str]] = [rows[0]]
    for r in rows[1:]:
        parts = [c.split() for c in r]
        ks = {len(p) for p in parts}
        if len(r) >= 2 and len(ks) == 1 and (k := ks.pop()) > 1 and all(is_num(x) for p in parts[1:] for x in p):
            out += [[p[i] for p in parts] for i in range(k)]
        else:
            out.append(r)
    rows = out
    body = [r for r in rows[1:] if any(c.split() and all(is_num(x) for x in c.split()) for c in r[1:])]
    if not body:
        return rows
    width = max(len(r) for r in rows)
    splits: dict[int, int] = {}
    for j in range(1, width):
        counts = {len(r[j].split()) if j < len(r) else -1 for r in body}
        if len(counts) == 1 and (k := counts.pop()) > 1 and all(
                all(is_num(x) for x in r[j].split()) for r in body):
            splits[j] = k
    if not splits:
        return rows
    first_body = rows.index(body[0])
    new_rows = []
    for i, r in enumerate(rows):
        nr: list[str] = []
        for j in range(width):
            cell = r[j] if j < len(r) else ""
            k = splits.get(j)
            if not k:
                nr.append(cell)
            elif i >= first_body or len(cell.split()) == k:
                nr += cell.split() if len(cell.split()) == k else [cell] + [""] * (k - 1)
            else:
                nr += [cell] * k  # a spanning header: repeated over its sub-columns
        new_rows.append(nr)
    # a header row split into sub-columns under a spanning header row: join the two into one label per column
    if first_body >= 2:
        merged = [" ".join(x for x in (a, b) if x) for a, b in zip(new_rows[first_body - 2], new_rows[first_body - 1],
                                                                  strict=False)]
        new_rows = new_rows[: first_body - 2] + [merged] + new_rows[first_body:]
    return new_rows


def is_num(s: str) -> bool:
    return bool(re.fullmatch(r"[-−+]?\$?\d[\d,]*(?:\.\d+)?\s*%?(?:\s*\(\d+(?:\.\d+)?\))?", s.strip()))


def num_value(s: str) -> float | None:
    m = re.search(r"[-−]?\d[\d,]*(?:\.\d+)?", s)
    return float(m.group(0).replace(",", "").replace("−", "-")) if m else None


def header_rows(rows: list[list[str]]) -> int:
    """How many leading rows are headers: the first, and the next ones while they hold no numbers."""
    n = 1
    while n < min(len(rows) - 1, 3) and not any(is_num(c) for c in rows[n][1:]):
        n += 1
    return n


def column_labels(rows: list[list[str]], n_head: int) -> list[str]:
    width = max(len(r) for r in rows)
    return [" ".join(r[j] for r in rows[:n_head] if j < len(r) and r[j]) for j in range(width)]
