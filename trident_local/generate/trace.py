"""Trace answers for scientific QA over a paper collection: papers, typed evidence locators, answer.

    tracer = Tracer(Index.open("idx"))                  # chat=None: the extractive CPU default
    res = tracer.trace("Which dataset ...?", answer_format="free_form")
    res.to_dict()  # {"papers": [...], "evidence": [{"paper", "page", "type", "object"}], "answer": ..., ...}

Stages: paper-level retrieval and selection (:mod:`trident_local.retrieve.papers`),
evidence retrieval inside the selected papers (:mod:`trident_local.retrieve.objects`),
then the answer from the selected evidence only:

- with a chat model, one call with the evidence as numbered text records and a JSON
  schema ``{"answer": ...}``; the reply is parsed strictly, repaired only where safe
  (code fences, a bare value instead of the object, a letter with its choice text),
  and the extractive answer is used, with the reason recorded, when it stays unusable;
- without one (the CPU default), extractively, labelled ``mode = "extractive"``: a
  multiple-choice question takes the choice whose words appear in the evidence unit
  that is most about the question (lexical + embedding); a table question the rows
  and columns of the best evidence table that the question names; a free-form
  question the table cell whose row and column labels it names, or, from the
  evidence sentences that match it best, the number nearest its words ("how many",
  "what score"), the name next to the asked-for noun ("which toolkit / dataset"),
  the clause after the verb ("what does X represent"), or else the whole sentence.
  Nothing is generated: an answer that is not in the evidence cannot be given.

The oracle rungs of the evaluation ladder pass ``papers`` (retrieval skipped) or
``evidence`` (gold locators, read back from the index, with their quotes).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from trident_local.docs.paper_meta import normalize_label, normalize_type
from trident_local.errors import ModelOutputError, TridentError
from trident_local.evaluate.trace_metrics import as_table, letters, mc_letter
from trident_local.retrieve.objects import Evidence, ObjectRetriever, split_sentences
from trident_local.retrieve.papers import PaperIndex

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.models.protocols import ChatModel

log = logging.getLogger(__name__)

FORMATS = ("free_form", "multiple_choice", "table")
_STOP = frozenset("""a an the of in on for to and or is are was were be been by with as at from that this these those it its
which what who whom whose when where why how does do did can could would should will shall may might than then there
their they them we our us you your he she his her i me my not no yes into over under between among about after before
paper papers work study show shows shown reported report according value values number use used using""".split())  # noqa: SIM905
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*|\d+(?:\.\d+)?")
_NUM = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?%?(?:\s?[–-]\s?\d[\d,]*(?:\.\d+)?%?)?(?![\w])|"
                  r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b", re.I)
_ENTITY_Q = re.compile(
    r"\b(?:which|what)\s+(?:[\w-]+\s+){0,4}?(system|model|method|approach|framework|toolkit|tool|library|"
    r"dataset|benchmark|work|metric|algorithm|retriever|baseline|technique|module|architecture|corpus|"
    r"language model|llm|solver|reasoner)s?\b|\bwhich (?:system|one) is it\b", re.I)
_EXPLAIN_Q = re.compile(r"\bwhat (?:does|do|did) (.+?) (represent|denote|indicate|stand for|mean|measure|show)s?\b",
                        re.I)
_PAREN = re.compile(r"\s*\([^()]*\)")
_METRIC = re.compile(r"(?:Macro-|Micro-)?(?:F1|F-1|BLEU(?:-\d)?|ROUGE(?:-[L\d])?|METEOR|AUC|EM|Acc|NDCG|MRR|PGR)", re.I)
_NAME_TOKEN = re.compile(r"(?<![\w-])[A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*(?![\w-])")
_NOT_NAMES = {"We", "The", "In", "Our", "This", "These", "That", "It", "For", "To", "As", "On", "By", "With",
              "A", "An", "However", "Then", "Finally", "First", "Second", "Table", "Figure", "Fig", "Section",
              "Appendix", "Equation", "And", "Or", "If", "When", "While", "Here", "There", "Each", "All"}
_NUMERIC_Q = re.compile(
    r"\b(how many|how much|what percentage|what proportion|what fraction|which year|what year|how large|how long|"
    r"how big|how high|how low|by how much|what (?:is |was |are |were )?(?:the )?(?:[\w-]+ ){0,3}(?:number|"
    r"percentage|proportion|ratio|accuracy|score|f1|f-1|value|weight|size|count|total|average|mean|rate|"
    r"precision|recall|macro-f1|micro-f1|bleu|rouge|auc|gain|improvement|drop|cost|time|alpha|threshold))\b", re.I)
_SUPERLATIVE = re.compile(r"\b(highest|best|largest|most|greatest|top|maximum|lowest|worst|smallest|least|fewest|"
                          r"minimum)\b", re.I)
_LOW = {"lowest", "worst", "smallest", "least", "fewest", "minimum"}


@dataclass
class TraceResult:
    """A trace answer. ``evidence`` items are locators {paper, page, type, object, object_id}."""

    question: str
    answer_format: str
    papers: list[str]
    evidence: list[dict[str, Any]]
    answer: Any
    mode: str  # extractive | generated
    model: str = "none"
    choices: list[str] = field(default_factory=list)
    paper_candidates: list[dict[str, Any]] = field(default_factory=list)
    support: str = ""  # the evidence text the answer was read from (extractive) or "" (generated)
    notes: list[str] = field(default_factory=list)  # repairs, fallbacks

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def prediction(self, rid: str) -> dict[str, Any]:
        """The record `trident eval trace score` reads."""
        return {"id": rid, "papers": self.papers, "evidence": self.evidence, "answer": self.answer,
                "mode": self.mode, "notes": self.notes}


# -- text helpers ---------------------------------------------------------------------------------------------------
def _stem(w: str) -> str:
    for suf in ("ly", "ing", "es", "ed", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def terms(text: str) -> set[str]:
    """Content words, lower-cased and lightly stemmed."""
    return {_stem(w.lower()) for w in _WORD.findall(text) if w.lower() not in _STOP}


def overlap(q: set[str], text: str) -> float:
    """Share of the question's content words found in ``text``."""
    if not q:
        return 0.0
    return len(q & terms(text)) / len(q)


def cover(q: set[str], label: str) -> float:
    """Share of a row or column label's content words that the question uses."""
    t = terms(label)
    return len(q & t) / len(t) if t else 0.0


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
        if len(r) >= 2 and len(ks) == 1 and (k := ks.pop()) > 1 and all(_is_num(x) for p in parts[1:] for x in p):
            out += [[p[i] for p in parts] for i in range(k)]
        else:
            out.append(r)
    rows = out
    body = [r for r in rows[1:] if any(c.split() and all(_is_num(x) for x in c.split()) for c in r[1:])]
    if not body:
        return rows
    width = max(len(r) for r in rows)
    splits: dict[int, int] = {}
    for j in range(1, width):
        counts = {len(r[j].split()) if j < len(r) else -1 for r in body}
        if len(counts) == 1 and (k := counts.pop()) > 1 and all(
                all(_is_num(x) for x in r[j].split()) for r in body):
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


def _is_num(s: str) -> bool:
    return bool(re.fullmatch(r"[-−+]?\$?\d[\d,]*(?:\.\d+)?\s*%?(?:\s*\(\d+(?:\.\d+)?\))?", s.strip()))


def _num_value(s: str) -> float | None:
    m = re.search(r"[-−]?\d[\d,]*(?:\.\d+)?", s)
    return float(m.group(0).replace(",", "").replace("−", "-")) if m else None


def _header_rows(rows: list[list[str]]) -> int:
    """How many leading rows are headers: the first, and the next ones while they hold no numbers."""
    n = 1
    while n < min(len(rows) - 1, 3) and not any(_is_num(c) for c in rows[n][1:]):
        n += 1
    return n


def _column_labels(rows: list[list[str]], n_head: int) -> list[str]:
    width = max(len(r) for r in rows)
    return [" ".join(r[j] for r in rows[:n_head] if j < len(r) and r[j]) for j in range(width)]


# -- extractive answers -----------------------------------------------------------------------------------------------
@dataclass
class _Unit:
    text: str
    ev: int  # index of the evidence item it came from


class Extractive:
    """The no-model answerer: picks, never writes."""

    def __init__(self, embedder: Any = None):
        self.embedder = embedder

    def _cos(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if self.embedder is None or not texts:
            return np.zeros(len(texts), np.float32)
        q = self.embedder.encode([query], kind="query")[0]
        return self.embedder.encode(list(texts), kind="passage") @ q

    def _units(self, evidence: Sequence[Evidence]) -> list[_Unit]:
        out = []
        for i, e in enumerate(evidence):
            if e.caption:
                out.append(_Unit(e.caption, i))
            if e.type != "table" and e.text:
                out += [_Unit(s, i) for s in split_sentences(e.text) if len(s) > 3]
        return out

    def _rank_units(self, question: str, units: list[_Unit]) -> list[tuple[float, _Unit]]:
        q = terms(question)
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
        sup = _SUPERLATIVE.search(question)
        for e in evidence:
            if e.type != "table" or not e.text:
                continue
            rows = parse_table(e.text)
            if len(rows) < 2:
                continue
            nh = _header_rows(rows)
            cols = _column_labels(rows, nh)
            col_score = [cover(q, c) for c in cols]
            if sup and not numeric and re.search(r"\b(which|what|who)\b", question, re.I):
                j = int(np.argmax(col_score[1:])) + 1 if len(col_score) > 1 else 0
                vals = [(_num_value(r[j]), r[0]) for r in rows[nh:] if j < len(r) and _is_num(r[j]) and r[0]]
                if j and col_score[j] > 0 and vals:
                    pick = (min if sup.group(1).lower() in _LOW else max)(vals, key=lambda v: v[0])
                    s = 1.0 + col_score[j]
                    if best is None or s > best[0]:
                        best = (s, pick[1], f"{e.label or e.object_id}: column {cols[j]!r}")
                continue
            for r in rows[nh:]:
                rs = cover(q, r[0]) if r else 0.0
                for j, cell in enumerate(r[1:], start=1):
                    if not cell or (numeric and not _is_num(cell)):
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
        m = _ENTITY_Q.search(question)
        if not m:
            return None
        head = (m.group(1) or "").lower()
        q = {w.lower() for w in _WORD.findall(question)}
        text = _PAREN.sub("", sentence)
        best, best_s = None, 0.0
        for k, t in enumerate(_NAME_TOKEN.finditer(text)):
            name = t.group(0).rstrip(".")
            if name in _NOT_NAMES or name.lower() in q or _stem(name.lower()) in {_stem(x) for x in q}:
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
                if (before and _stem(before[-1]) == _stem(head)) or (after and _stem(after[0]) == _stem(head)):
                    score += 2.0
            if score > best_s:
                best, best_s = name, score
        return best

    @staticmethod
    def explanation(question: str, sentence: str) -> tuple[str, float] | None:
        """For "what does X represent/denote/...": (the clause after that verb in ``sentence``, how well the
        clause's subject matches X)."""
        m = _EXPLAIN_Q.search(question)
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

    def free_form(self, question: str, evidence: Sequence[Evidence]) -> tuple[str, str]:
        numeric = bool(_NUMERIC_Q.search(question))
        cell = self.table_cell(question, evidence, numeric)
        if cell and cell[2] >= 1.0:
            value = cell[0]
            if numeric:
                m = _NUM.search(value)
                value = m.group(0) if m else value
            return value, cell[1]
        ranked = self._rank_units(question, self._units(evidence))
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

    def multiple_choice(self, question: str, choices: Sequence[str], evidence: Sequence[Evidence]) -> tuple[str, str]:
        units = self._units(evidence) + [_Unit(r, i) for i, e in enumerate(evidence) if e.type == "table"
                                         for r in e.text.splitlines() if r.strip()]
        if not choices:
            return "", ""
        if not units:
            return letters(len(choices))[0], ""
        texts = [u.text for u in units]
        all_text = " ".join(texts).lower()
        q = terms(question)
        rel = 0.5 * np.array([overlap(q, t) for t in texts]) + 0.5 * self._cos(question, texts)
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
        nh = _header_rows(rows)
        cols = _column_labels(rows, nh)
        keep_cols = [0] + [j for j in range(1, len(cols)) if overlap(q, cols[j]) > 0] or list(range(len(cols)))
        if keep_cols == [0]:
            keep_cols = list(range(len(cols)))
        body = [r for r in rows[nh:] if r and overlap(q, r[0]) > 0] or rows[nh:]
        out = [[cols[j] for j in keep_cols]] + [[r[j] if j < len(r) else "" for j in keep_cols] for r in body]
        return out, f"{e.label or e.object_id}"

    def answer(self, question: str, fmt: str, choices: Sequence[str], evidence: Sequence[Evidence]) -> tuple[Any, str]:
        if fmt == "multiple_choice":
            return self.multiple_choice(question, choices, evidence)
        if fmt == "table":
            return self.table(question, evidence)
        return self.free_form(question, evidence)


# -- model answers ---------------------------------------------------------------------------------------------------
SYSTEM = ("You answer questions about scientific papers. Use only the numbered evidence records; each gives the "
          "paper, page, type and text of one table, figure caption, equation, citation context or text span. "
          'Reply with one JSON object and nothing else: {"answer": ...}.')


def answer_schema(fmt: str, n_choices: int = 0) -> dict[str, Any]:
    if fmt == "multiple_choice":
        ans: dict[str, Any] = {"type": "string", "enum": letters(n_choices)}
    elif fmt == "table":
        ans = {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}
    else:
        ans = {"type": "string"}
    return {"type": "object", "properties": {"answer": ans}, "required": ["answer"]}


def format_instructions(fmt: str, choices: Sequence[str]) -> str:
    if fmt == "multiple_choice":
        opts = "\n".join(f"{ltr}. {c}" for ltr, c in zip(letters(len(choices)), choices, strict=True))
        return f"Choices:\n{opts}\nAnswer with the letter of the one correct choice."
    if fmt == "table":
        return "Answer with a table: a list of rows, the header row first, every cell a string."
    return "Answer with a short phrase or number only, no explanation."


def evidence_records(evidence: Sequence[Evidence], max_chars: int = 1500) -> str:
    lines = []
    for i, e in enumerate(evidence, start=1):
        label = f" {e.label}" if e.label else ""
        lines.append(f"[{i}] paper {e.paper}, page {e.page}, {e.type}{label}: {e.content(max_chars)}")
    return "\n".join(lines)


def parse_model_answer(text: str, fmt: str, choices: Sequence[str]) -> tuple[Any, list[str]]:
    """(answer, repairs) from a model's reply; raises ModelOutputError when no usable answer is in it."""
    from trident_local.models.structured import parse_json_text

    repairs: list[str] = []
    try:
        value, _ = parse_json_text(text)
    except ModelOutputError:
        raw = text.strip().strip('"').strip()
        if not raw or fmt == "table" and len(as_table(raw)) < 2:
            raise
        value, repairs = {"answer": raw}, ["reply was not JSON: taken as the answer text"]
    if isinstance(value, Mapping):
        if "answer" not in value:
            raise ModelOutputError(f"model reply has no 'answer': {str(value)[:200]}")
        ans = value["answer"]
    else:
        ans = value
        repairs.append("reply was a bare value, not {'answer': ...}")
    if fmt == "multiple_choice":
        letter = mc_letter(ans, choices)
        if letter is None:
            raise ModelOutputError(f"no choice letter in model answer {str(ans)[:100]!r}")
        if letter != str(ans).strip():
            repairs.append(f"answer {str(ans)[:60]!r} read as {letter}")
        return letter, repairs
    if fmt == "table":
        rows = as_table(ans)
        if len(rows) < 2:
            raise ModelOutputError(f"model table answer has fewer than two rows: {str(ans)[:100]!r}")
        return rows, repairs
    if isinstance(ans, list | dict):
        raise ModelOutputError(f"free-form answer is not a string: {str(ans)[:100]!r}")
    return str(ans).strip(), repairs


def model_answer(chat: ChatModel, question: str, fmt: str, choices: Sequence[str],
                 evidence: Sequence[Evidence], max_tokens: int = 256) -> tuple[Any, list[str]]:
    from trident_local.models.protocols import ChatRequest, Message, SamplingParams

    user = (f"Question: {question}\n{format_instructions(fmt, choices)}\n\nEvidence:\n"
            f"{evidence_records(evidence) or '(none)'}")
    req = ChatRequest([Message("system", SYSTEM), Message("user", user)],
                      params=SamplingParams(max_tokens=max_tokens if fmt != "table" else 4 * max_tokens),
                      json_schema=answer_schema(fmt, len(choices)), tag="trace")
    res = chat.chat([req])[0]
    if res.error:
        raise ModelOutputError(f"model call failed: {res.error}")
    return parse_model_answer(res.text, fmt, choices)


# -- the tracer -------------------------------------------------------------------------------------------------------
class Tracer:
    """Paper selection, evidence selection and the answer for one question at a time."""

    def __init__(self, index: Index, chat: ChatModel | None = None, *, embedder: Any = None,
                 per_paper: int = 1, max_papers: int = 3, max_evidence: int = 5):
        self.index = index
        self.papers = PaperIndex(index, embedder)
        self.objects = ObjectRetriever(index, self.papers.embedder)
        self.chat = chat
        self.extractive = Extractive(self.papers.embedder)
        self.per_paper, self.max_papers, self.max_evidence = per_paper, max_papers, max_evidence

    @classmethod
    def from_profile(cls, index: Index, profile: str | None = None, **kw: Any) -> Tracer:
        """With the chat model of ``profile`` (default: the index config's ``chat``; "none" = extractive)."""
        from trident_local.models.profiles import build_model

        return cls(index, build_model("chat", profile or index.config.chat), **kw)

    def oracle_evidence(self, items: Sequence[Mapping[str, Any]]) -> list[Evidence]:
        """Gold locators as Evidence: the matching index object's text, plus the gold quote."""
        out = []
        for it in items:
            doc_id = self.papers.resolve(str(it["paper"]))
            page, typ = int(it["page"]), normalize_type(str(it.get("type", "")))
            want = normalize_label(it.get("object"), typ)
            quote = str(it.get("quote") or "")
            cands = [c.obj for c in self.objects.candidates(doc_id) if c.obj.page == page and c.obj.type == typ]
            if want:
                cands = [o for o in cands if normalize_label(o.label, o.type) == want] or cands
            q = terms(quote)
            obj = max(cands, key=lambda o: overlap(q, f"{o.caption} {o.text}")) if cands and (want or q) else None
            label = str(it.get("object") or "") or (obj.label if obj else "")
            text = obj.text if obj else ""
            if quote and (not text or typ != "table" and quote not in text):
                text = f"{text}\n{quote}".strip()  # a table keeps its rows: the quote would read as one more
            out.append(Evidence(self.papers.paper_id(doc_id), doc_id, page, typ, obj.object_id if obj else "",
                                label, obj.caption if obj else "", text, 1.0, "oracle"))
        return out

    def trace(self, question: str, answer_format: str = "free_form", choices: Sequence[str] | None = None, *,
              papers: Sequence[str] | None = None, evidence: Sequence[Mapping[str, Any]] | None = None,
              n_papers: int | None = None) -> TraceResult:
        """Answer ``question`` with its trace. ``papers``: use these (oracle papers); ``evidence``: use these
        gold locators (oracle evidence; implies their papers)."""
        fmt = answer_format
        if fmt not in FORMATS:
            raise TridentError(f"answer format {fmt!r} is not one of {', '.join(FORMATS)}")
        choices = list(choices or [])
        if fmt == "multiple_choice" and len(choices) < 2:
            raise TridentError("a multiple_choice question needs at least two --choices")
        notes: list[str] = []
        cand_info: list[dict[str, Any]] = []
        if evidence is not None:
            chosen_ev = self.oracle_evidence(evidence)
            doc_ids = list(dict.fromkeys(e.doc_id for e in chosen_ev))
            if papers:
                doc_ids = list(dict.fromkeys([self.papers.resolve(p) for p in papers] + doc_ids))
            locators = [{"paper": e.paper, "page": e.page, "type": e.type, "object": e.label or None,
                         "object_id": e.object_id} for e in chosen_ev]
        else:
            if papers is not None:
                doc_ids = list(dict.fromkeys(self.papers.resolve(p) for p in papers))
            else:
                hits = self.papers.search(question)
                sel = self.papers.select(question, hits, n=n_papers, max_papers=self.max_papers)
                doc_ids = [h.doc_id for h in sel]
                cand_info = [{"paper": h.paper_id, "title": h.title, "score": round(h.score, 5), "named": h.named,
                              "selected": h.doc_id in doc_ids} for h in hits[:5]]
            ranked = self.objects.search(question, doc_ids, answer_format=fmt)
            chosen_ev = self.objects.select(question, ranked, doc_ids, per_paper=self.per_paper,
                                            max_items=self.max_evidence)
            locators = [e.locator() for e in chosen_ev]
        paper_ids = [self.papers.paper_id(d) for d in doc_ids]
        mode, model_name, support = "extractive", "none", ""
        answer: Any = None
        if self.chat is not None:
            model_name = getattr(self.chat, "name", type(self.chat).__name__)
            try:
                answer, repairs = model_answer(self.chat, question, fmt, choices, chosen_ev)
                notes += repairs
                mode = "generated"
            except ModelOutputError as e:
                notes.append(f"model answer unusable ({e}); extractive answer used instead")
        if mode == "extractive":
            answer, support = self.extractive.answer(question, fmt, choices, chosen_ev)
        return TraceResult(question, fmt, paper_ids, locators, answer, mode, model_name, choices, cand_info,
                           support, notes)
