"""The no-model trace answerer (the CPU default): picks, never writes, labelled ``mode = "extractive"``.

A multiple-choice question takes the choice whose words appear in the evidence unit that is most about
the question (lexical + embedding); a table question the rows and columns of the best evidence table that
the question names; a free-form question the table cell whose row and column labels it names, or, from the
evidence sentences that match it best, the number nearest its words ("how many", "what score"), the name
next to the asked-for noun ("which toolkit / dataset"), the clause after the verb ("what does X
represent"), or else the whole sentence. An answer that is not in the evidence cannot be given.

Words are :func:`trident_local.text.identifiers` minus :data:`~trident_local.text.TRACE_STOP_WORDS`,
stemmed with :func:`trident_local.text.stem`; sentences are :func:`trident_local.text.sentences`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trident_local.query import Query
from trident_local.text import (
    ENTITY_QUESTION,
    EXPLAIN_QUESTION,
    LOW_SUPERLATIVES,
    NUMERIC_QUESTION,
    SUPERLATIVE,
    TRACE_STOP_WORDS,
    identifiers,
    sentences,
    stem,
)
from trident_local.trace.evidence import Evidence
from trident_local.trace.formats import letters
from trident_local.trace.tables import column_labels, header_rows, is_num, num_value, parse_table

_NUM = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?%?(?:\s?[–-]\s?\d[\d,]*(?:\.\d+)?%?)?(?![\w])|"
                  r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b", re.I)
_PAREN = re.compile(r"\s*\([^()]*\)")
_METRIC = re.compile(r"(?:Macro-|Micro-)?(?:F1|F-1|BLEU(?:-\d)?|ROUGE(?:-[L\d])?|METEOR|AUC|EM|Acc|NDCG|MRR|PGR)", re.I)
_NAME_TOKEN = re.compile(r"(?<![\w-])[A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*(?![\w-])")
_NOT_NAMES = {"We", "The", "In", "Our", "This", "These", "That", "It", "For", "To", "As", "On", "By", "With",
              "A", "An", "However", "Then", "Finally", "First", "Second", "Table", "Figure", "Fig", "Section",
              "Appendix", "Equation", "And", "Or", "If", "When", "While", "Here", "There", "Each", "All"}


# -- words -----------------------------------------------------------------------------------------------------------
def terms(text: str) -> set[str]:
    """Content words, lower-cased and stemmed."""
    return {stem(w.lower()) for w in identifiers(text) if w.lower() not in TRACE_STOP_WORDS}


def overlap(q: set[str], text: str) -> float:
    """Share of the question's content words found in ``text``."""
    if not q:
        return 0.0
    return len(q & terms(text)) / len(q)


def cover(q: set[str], label: str) -> float:
    """Share of a row or column label's content words that the question uses."""
    t = terms(label)
    return len(q & t) / len(t) if t else 0.0


# -- the answerer -----------------------------------------------------------------------------------------------
@dataclass
class _Unit:
    text: str
    ev: int  # index of the evidence item it came from


class Extractive:
    """The no-model answerer: picks, never writes."""

    def __init__(self, embedder: Any = None):
        self.embedder = embedder

    def _cos(self, query: str | Query, texts: Sequence[str]) -> np.ndarray:
        if self.embedder is None or not texts:
            return np.zeros(len(texts), np.float32)
        q = Query.of(query).vector(self.embedder)
        return self.embedder.encode(list(texts), kind="passage") @ q

    def _units(self, evidence: Sequence[Evidence]) -> list[_Unit]:
        out = []
        for i, e in enumerate(evidence):
            if e.caption:
                out.append(_Unit(e.caption, i))
            if e.type != "table" and e.text:
                out += [_Unit(s, i) for s in sentences(e.text) if len(s) > 3]
        return out

    def _rank_units(self, question: str | Query, units: list[_Unit]) -> list[tuple[float, _Unit]]:
        q = terms(Query.of(question).text)
        cos = self._cos(question, [u.text for u in units])
        scored = [(0.5 * overlap(q, u.text) + 0.5 * float(c), u) for u, c in zip(units, cos, strict=True)]
        return sorted(scored, key=lambda x: -x[0])

    def table_cell(self, question: str, evidence: Sequence[Evidence], numeric: bool) -> tuple[str, str, float] | None:
        """(cell, support, score): the cell whose row label and column header best match the question; for a
        superlative question ("which model is best on X"), the row label of the column's extreme value."""
        q = terms(question)
        if re.search(r"\bhow many\b", question, re.I):
            q |= {"count", "number", "size", "total"}
        best: tuple[float, str, str] | None = None
        sup = SUPERLATIVE.search(question)
        for e in evidence:
            if e.type != "table" or not e.text:
                continue
            rows = parse_table(e.text)
            if len(rows) < 2:
                continue
            nh = header_rows(rows)
            cols = column_labels(rows, nh)
            col_score = [cover(q, c) for c in cols]
            if sup and not numeric and re.search(r"\b(which|what|who)\b", question, re.I):
                j = int(np.argmax(col_score[1:])) + 1 if len(col_score) > 1 else 0
                vals = [(num_value(r[j]), r[0]) for r in rows[nh:] if j < len(r) and is_num(r[j]) and r[0]]
                if j and col_score[j] > 0 and vals:
                    pick = (min if sup.group(1).lower() in LOW_SUPERLATIVES else max)(vals, key=lambda v: v[0])
                    s = 1.0 + col_score[j]
                    if best is None or s > best[0]:
                        best = (s, pick[1], f"{e.label or e.object_id}: column {cols[j]!r}")
                continue
            for r in rows[nh:]:
                rs = cover(q, r[0]) if r else 0.0
                for j, cell in enumerate(r[1:], start=1):
                    if not cell or (numeric and not is_num(cell)):
                        continue
                    cs = col_score[j] if j < len(col_score) else 0.0
                    s = rs + cs
                    if rs > 0 and cs > 0 and (best is None or s > best[0]):
                        best = (s, cell, f"{e.label or e.object_id}: row {r[0]!r}, column {cols[j] if j < len(cols) else j!r}")
        return (best[1], best[2], best[0]) if best else None

    @staticmethod
    def entity(question: str, sentence: str) -> str | None:
        """For "which toolkit/model/dataset ..." questions: the name in ``sentence`` that the question does not
        already use, preferring one next to the asked-for noun ("the Pyserini toolkit", "model TRUE");
        parentheses (citations, acronyms) are skipped."""
        m = ENTITY_QUESTION.search(question)
        if not m:
            return None
        head = (m.group(1) or "").lower()
        q = {w.lower() for w in identifiers(question)}
        text = _PAREN.sub("", sentence)
        best, best_s = None, 0.0
        for k, t in enumerate(_NAME_TOKEN.finditer(text)):
            name = t.group(0).rstrip(".")
            if name in _NOT_NAMES or name.lower() in q or stem(name.lower()) in {stem(x) for x in q}:
                continue
            if _METRIC.fullmatch(name) and head != "metric":
                continue  # a score's name does not answer "which dataset / model / toolkit"
            if t.start() == 0 and sum(c.isupper() for c in name) < 2:
                continue  # an ordinary sentence-initial word
            score = 1.0 / (1 + 0.1 * k)
            if sum(c.isupper() for c in name) >= 2 or any(c.isdigit() for c in name) or "-" in name:
                score += 0.5
            if head:
                before = text[max(0, t.start() - 25): t.start()].lower().split()
                after = text[t.end(): t.end() + 25].lower().split()
                if (before and stem(before[-1]) == stem(head)) or (after and stem(after[0]) == stem(head)):
                    score += 2.0
            if score > best_s:
                best, best_s = name, score
        return best

    @staticmethod
    def explanation(question: str, sentence: str) -> tuple[str, float] | None:
        """For "what does X represent/denote/...": (the clause after that verb in ``sentence``, how well the
        clause's subject matches X)."""
        m = EXPLAIN_QUESTION.search(question)
        if not m:
            return None
        subject, verb = terms(m.group(1)), m.group(2).split()[0].lower()
        best = None
        for clause in re.split(r"[;.]\s+", sentence):
            v = re.search(rf"\b{verb}(?:s|es|ed)?\b\s+(.+?)(?:[.;]|,\s|$)", clause, re.I)
            if v:
                fit = overlap(subject, clause[: v.start()])
                if best is None or fit > best[1]:
                    best = (v.group(1).strip(), fit)
        return best

    def free_form(self, question: str | Query, evidence: Sequence[Evidence]) -> tuple[str, str]:
        query = Query.of(question)
        question = query.text
        numeric = bool(NUMERIC_QUESTION.search(question))
        cell = self.table_cell(question, evidence, numeric)
        if cell and cell[2] >= 1.0:
            value = cell[0]
            if numeric:
                m = _NUM.search(value)
                value = m.group(0) if m else value
            return value, cell[1]
        ranked = self._rank_units(query, self._units(evidence))
        if not ranked:
            return (cell[0], cell[1]) if cell else ("", "")
        if numeric:
            q = terms(question)
            for _, u in ranked[:3]:
                nums = [m for m in _NUM.finditer(u.text)  # not the numbers of labels ("Table 2", "Section 4")
                        if not re.search(r"(?:Table|Figure|Fig\.|Section|Sec\.|Eq\.|Equation|Appendix|Algorithm)\s*\(?$",
                                         u.text[: m.start()])]
                if not nums:
                    continue
                words = u.text.split()
                pos = [i for i, w in enumerate(words) if terms(w) & q]

                def dist(m: re.Match[str], text: str = u.text, pos: list[int] = pos) -> float:
                    k = len(text[: m.start()].split())
                    return min((abs(k - p) for p in pos), default=0)

                return min(nums, key=dist).group(0), u.text
        explained = [(x, u) for _, u in ranked[:5] if (x := self.explanation(question, u.text))]
        if explained:
            (clause, _), u = max(explained, key=lambda e: e[0][1])
            return clause, u.text
        for _, u in ranked[:3]:
            picked = self.entity(question, u.text)
            if picked:
                return picked, u.text
        return ranked[0][1].text, ranked[0][1].text

    def multiple_choice(self, question: str | Query, choices: Sequence[str],
                        evidence: Sequence[Evidence]) -> tuple[str, str]:
        query = Query.of(question)
        question = query.text
        units = self._units(evidence) + [_Unit(r, i) for i, e in enumerate(evidence) if e.type == "table"
                                         for r in e.text.splitlines() if r.strip()]
        if not choices:
            return "", ""
        if not units:
            return letters(len(choices))[0], ""
        texts = [u.text for u in units]
        all_text = " ".join(texts).lower()
        q = terms(question)
        rel = 0.5 * np.array([overlap(q, t) for t in texts]) + 0.5 * self._cos(query, texts)
        best, best_s, support = 0, -1e9, ""
        for ci, c in enumerate(choices):
            ct = terms(c)
            cos = self._cos(f"{question} {c}", texts)
            # a unit supports a choice when it holds the choice's words and is about the question
            per = [overlap(ct, u.text) * (0.2 + float(r)) + 0.1 * float(x)
                   for u, r, x in zip(units, rel, cos, strict=True)]
            k = int(np.argmax(per))
            s = per[k]
            nums = [n.group(0).rstrip("%") for n in _NUM.finditer(c)]
            if nums:
                s += 0.3 * sum(n in all_text for n in nums) / len(nums)
            if s > best_s + 1e-9:
                best, best_s, support = ci, s, units[k].text
        return letters(len(choices))[best], support

    def table(self, question: str, evidence: Sequence[Evidence]) -> tuple[list[list[str]], str]:
        q = terms(question)
        tables = [e for e in evidence if e.type == "table" and len(parse_table(e.text)) >= 2]
        if not tables:
            return [], ""
        e = max(tables, key=lambda t: overlap(q, f"{t.label} {t.caption} {t.text}"))
        rows = parse_table(e.text)
        nh = header_rows(rows)
        cols = column_labels(rows, nh)
        keep_cols = [0] + [j for j in range(1, len(cols)) if overlap(q, cols[j]) > 0] or list(range(len(cols)))
        if keep_cols == [0]:
            keep_cols = list(range(len(cols)))
        body = [r for r in rows[nh:] if r and overlap(q, r[0]) > 0] or rows[nh:]
        out = [[cols[j] for j in keep_cols]] + [[r[j] if j < len(r) else "" for j in keep_cols] for r in body]
        return out, f"{e.label or e.object_id}"

    def answer(self, question: str | Query, fmt: str, choices: Sequence[str],
               evidence: Sequence[Evidence]) -> tuple[Any, str]:
        if fmt == "multiple_choice":
            return self.multiple_choice(question, choices, evidence)
        if fmt == "table":
            return self.table(Query.of(question).text, evidence)
        return self.free_form(question, evidence)


