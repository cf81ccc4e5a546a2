"""LitTraceQA trace metrics: small pure functions over gold and predicted records.

A gold record (see ``trace_dataset``) holds ``gold_papers``, ``gold_evidence``
[{paper, page, type, object, quote}], ``answer_format``, ``answer`` and, for
multiple choice, ``choices``. A prediction holds ``papers``, ``evidence``
[{paper, page, type, object}] and ``answer``. Per record:

- paper retrieval P/R/F1 over the sets of normalized paper ids;
- evidence grounding P/R/F1: a predicted item matches a gold item when paper, page
  and type agree and, when both give an object label, the labels agree (case and
  spaces ignored; "Fig. 3" = "Figure 3"; "(2)" = "Eq. 2" = "Equation (2)"); the
  matching is one-to-one (a maximum bipartite matching, so the count does not
  depend on the order of the lists);
- answer correctness by format: free-form by normalized exact match, or by number
  within a tolerance; multiple choice by letter; table by cell-level F1 at or above
  a threshold;
- strict joint success: papers exactly the gold set AND every gold evidence item
  matched AND the answer correct.

Run scores are macro averages over records. Empty sets: with nothing to find and
nothing predicted, P = R = F1 = 1; nothing predicted but something to find gives
P = R = F1 = 0; predictions with nothing to find give P = 0, R = 1.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from trident_local.docs.paper_meta import (  # noqa: F401  (TYPE_ALIASES re-exported: the scorer's compare forms)
    OBJECT_ID_RE,
    TYPE_ALIASES,
    normalize_label,
    normalize_paper_id,
    normalize_type,
)
from trident_local.trace.formats import as_table, mc_letter, normalize_text

TABLE_THRESHOLD = 0.8  # cell F1 at or above which a table answer counts as correct
REL_TOL = 1e-3  # numeric answers: relative tolerance (or half a unit of the gold's last printed digit)

_NUMBER_WORDS = {w: i for i, w in enumerate(
    ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
     "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
_NUMBER = re.compile(r"^[~≈]?\s*([-+−–]?)\s*[$€£]?\s*(\d[\d,]*(?:\.\d+)?|\.\d+)\s*(%|percent|pp|points?)?$")


@dataclass(frozen=True)
class PRF:
    precision: float
    recall: float
    f1: float


def prf(n_match: int, n_pred: int, n_gold: int) -> PRF:
    """Precision, recall, F1 from counts, with the empty-set conventions of this module."""
    if n_gold == 0 and n_pred == 0:
        return PRF(1.0, 1.0, 1.0)
    p = n_match / n_pred if n_pred else 0.0
    r = n_match / n_gold if n_gold else 1.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return PRF(p, r, f)


# -- papers ---------------------------------------------------------------------------------------------------
def paper_prf(pred: Iterable[str], gold: Iterable[str]) -> PRF:
    """P/R/F1 over sets of normalized paper ids (duplicates in a list count once)."""
    p = {normalize_paper_id(x) for x in pred if str(x).strip()}
    g = {normalize_paper_id(x) for x in gold if str(x).strip()}
    return prf(len(p & g), len(p), len(g))


# -- evidence -------------------------------------------------------------------------------------------------
def _is_object_id(norm_label: str) -> bool:
    return bool(OBJECT_ID_RE.match(norm_label))


def evidence_compatible(pred: Mapping[str, Any], gold: Mapping[str, Any]) -> bool:
    """Same paper, page and type; same object when both name one in a comparable form.

    ``object`` is the printed label ("Table 2"); an internal id ("p7:table:1") is
    compared only with another id, since ids depend on the detector.
    """
    if normalize_paper_id(pred.get("paper", "")) != normalize_paper_id(gold.get("paper", "")):
        return False
    try:
        if int(pred.get("page")) != int(gold.get("page")):
            return False
    except (TypeError, ValueError):
        return False
    gt = normalize_type(gold.get("type", ""))
    if normalize_type(pred.get("type", "")) != gt:
        return False
    a, b = normalize_label(pred.get("object"), gt), normalize_label(gold.get("object"), gt)
    if a and b and _is_object_id(a) == _is_object_id(b):
        return a == b
    return True


def max_matching(n_left: int, n_right: int, edges: Mapping[int, Sequence[int]]) -> list[tuple[int, int]]:
    """A maximum bipartite matching (augmenting paths); ``edges[i]`` lists the right nodes left ``i`` may take."""
    match_right: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges.get(i, ()):
            if j in seen:
                continue
            seen.add(j)
            if j not in match_right or augment(match_right[j], seen):
                match_right[j] = i
                return True
        return False

    for i in range(n_left):
        augment(i, set())
    return sorted((i, j) for j, i in match_right.items())


def match_evidence(pred: Sequence[Mapping[str, Any]], gold: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """One-to-one (pred index, gold index) pairs, as many as possible."""
    edges = {i: [j for j, g in enumerate(gold) if evidence_compatible(p, g)] for i, p in enumerate(pred)}
    return max_matching(len(pred), len(gold), edges)


def evidence_prf(pred: Sequence[Mapping[str, Any]], gold: Sequence[Mapping[str, Any]]) -> tuple[PRF, list[tuple[int, int]]]:
    pairs = match_evidence(pred, gold)
    return prf(len(pairs), len(pred), len(gold)), pairs


# -- answers --------------------------------------------------------------------------------------------------
def parse_number(s: Any) -> tuple[float, bool, int] | None:
    """(value, is_percent, printed decimals) when the whole string is one number; else None."""
    if isinstance(s, bool):
        return None
    if isinstance(s, int | float):
        if isinstance(s, float) and not math.isfinite(s):
            return None
        text = repr(s)
        return float(s), False, len(text.split(".")[1]) if "." in text and isinstance(s, float) else 0
    t = unicodedata.normalize("NFKC", str(s)).strip().lower().rstrip(".")
    if t in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[t]), False, 0
    m = _NUMBER.match(t)
    if not m:
        return None
    digits = m.group(2).replace(",", "")
    value = float(digits) * (-1.0 if m.group(1) in ("-", "−", "–") else 1.0)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return value, m.group(3) in ("%", "percent"), decimals


def numbers_match(pred: Any, gold: Any, rel_tol: float = REL_TOL) -> bool:
    """Both whole-string numbers, equal within max(half a unit of gold's last printed digit, rel_tol * |gold|);
    a percentage also matches the same value as a fraction (50% = 0.5) when only one side says %."""
    p, g = parse_number(pred), parse_number(gold)
    if p is None or g is None:
        return False
    tol = max(0.5 * 10 ** (-g[2]), rel_tol * abs(g[0])) + 1e-12
    if abs(p[0] - g[0]) <= tol:
        return True
    if p[1] != g[1]:
        scale = 100.0 if g[1] else 0.01  # gold is a percent: compare pred*100; gold a fraction: pred/100
        return abs(p[0] * scale - g[0]) <= tol
    return False


def free_form_correct(pred: Any, gold: Any, rel_tol: float = REL_TOL) -> bool:
    """Normalized exact match against the gold answer (or any of a list of accepted answers), or numbers within
    tolerance."""
    if pred is None:
        return False
    golds = gold if isinstance(gold, list) else [gold]
    pred_s = pred if not isinstance(pred, list) else " ".join(map(str, pred))
    for g in golds:
        if numbers_match(pred_s, g, rel_tol):
            return True
        if normalize_text(pred_s) and normalize_text(pred_s) == normalize_text(g):
            return True
    return False


def mc_correct(pred: Any, gold: Any, choices: Sequence[str] = ()) -> bool:
    g = mc_letter(gold, choices) or str(gold).strip().upper()
    return mc_letter(pred, choices) == g


def _cell_core(s: str) -> str:
    """A cell without a trailing parenthesised part after a number ("66.4% (0.8%)" -> "66.4%")."""
    m = re.match(r"^\s*(\S+)\s*\([^()]*\)\s*$", s)
    return m.group(1) if m and parse_number(m.group(1)) is not None else s


def _cell_equal(a: str, b: str, rel_tol: float) -> bool:
    a, b = _cell_core(a), _cell_core(b)
    if numbers_match(a, b, rel_tol):
        return True
    return normalize_text(a) == normalize_text(b)


def table_cells(rows: Sequence[Sequence[Any]]) -> list[tuple[str, str, str]]:
    """(row key, column header, value) for every body cell, the row key being the row's first cell and the
    header the first row's cell in that column (normalized); cells beyond the header's width get ``col<j>``."""
    if not rows:
        return []
    header = [normalize_text(h) for h in rows[0]]
    out = []
    for row in rows[1:]:
        if not row:
            continue
        key = normalize_text(row[0])
        for j, v in enumerate(row):
            col = header[j] if j < len(header) else f"col{j}"
            out.append((key, col, str(v)))
    return out


def align_keys(pred: Iterable[str], gold: Iterable[str]) -> dict[str, str]:
    """Map predicted row keys (or column headers) to gold ones: equal normalized text first; then, for what is
    left, a pair whose words one contains the other's ("HOVER 2-hop" ~ "2-hop"), when that pair is unique."""
    p_keys, g_keys = list(dict.fromkeys(pred)), list(dict.fromkeys(gold))
    out = {k: k for k in p_keys if k in g_keys}
    left_p = [k for k in p_keys if k not in out]
    left_g = [k for k in g_keys if k not in out.values()]

    def related(a: str, b: str) -> bool:
        sa, sb = set(a.split()), set(b.split())
        return bool(sa) and bool(sb) and (sa <= sb or sb <= sa)

    for p in left_p:
        cands = [g for g in left_g if related(p, g)]
        if len(cands) == 1 and sum(related(q, cands[0]) for q in left_p) == 1:
            out[p] = cands[0]
            left_g.remove(cands[0])
    return out


def table_prf(pred: Any, gold: Any, rel_tol: float = REL_TOL) -> PRF:
    """Cell-level P/R/F1: a predicted cell counts when gold has an unused cell with the same row key and column
    header (after :func:`align_keys`) and an equal value (normalized text, or numbers within tolerance; a
    trailing "(std)" after a number is ignored)."""
    p_cells, g_cells = table_cells(as_table(pred)), table_cells(as_table(gold))
    rows = align_keys([k for k, _, _ in p_cells], [k for k, _, _ in g_cells])
    cols = align_keys([c for _, c, _ in p_cells], [c for _, c, _ in g_cells])
    p_cells = [(rows.get(k, k), cols.get(c, c), v) for k, c, v in p_cells]
    free: dict[tuple[str, str], list[str]] = {}
    for k, c, v in g_cells:
        free.setdefault((k, c), []).append(v)
    n = 0
    for k, c, v in p_cells:
        vals = free.get((k, c), [])
        for i, gv in enumerate(vals):
            if _cell_equal(v, gv, rel_tol):
                del vals[i]
                n += 1
                break
    if not p_cells and not g_cells:
        return PRF(0.0, 0.0, 0.0)
    return prf(n, len(p_cells), len(g_cells))


def answer_score(answer_format: str, pred: Any, gold: Any, choices: Sequence[str] = (), *,
                 table_threshold: float = TABLE_THRESHOLD, rel_tol: float = REL_TOL) -> tuple[float, bool]:
    """(graded score in [0, 1], correct) for one answer; the graded score is the cell F1 for tables."""
    fmt = (answer_format or "free_form").lower()
    if fmt == "multiple_choice":
        ok = mc_correct(pred, gold, choices)
        return float(ok), ok
    if fmt == "table":
        f = table_prf(pred, gold, rel_tol).f1
        return f, f >= table_threshold
    ok = free_form_correct(pred, gold, rel_tol)
    return float(ok), ok


# -- records and runs -----------------------------------------------------------------------------------------
@dataclass
class RecordScore:
    id: str
    answer_format: str
    multi_paper: bool
    paper_precision: float
    paper_recall: float
    paper_f1: float
    evidence_precision: float
    evidence_recall: float
    evidence_f1: float
    answer_score: float
    answer_correct: bool
    papers_exact: bool
    evidence_complete: bool
    joint_success: bool
    matched_gold: list[int] = field(default_factory=list)  # indices of gold evidence items matched
    gold_types: list[str] = field(default_factory=list)
    missing: bool = False  # no prediction for this record

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_record(gold: Mapping[str, Any], pred: Mapping[str, Any] | None, *,
                 table_threshold: float = TABLE_THRESHOLD, rel_tol: float = REL_TOL) -> RecordScore:
    """All stage scores of one record; a missing prediction scores as an empty one."""
    missing = pred is None
    pred = pred or {}
    g_papers = list(gold.get("gold_papers", []))
    g_ev = list(gold.get("gold_evidence", []))
    p_papers = list(pred.get("papers") or [])
    p_ev = [e for e in (pred.get("evidence") or []) if isinstance(e, Mapping)]
    pp = paper_prf(p_papers, g_papers)
    ep, pairs = evidence_prf(p_ev, g_ev)
    fmt = gold.get("answer_format", "free_form")
    score, ok = answer_score(fmt, pred.get("answer"), gold.get("answer"), gold.get("choices") or (),
                             table_threshold=table_threshold, rel_tol=rel_tol)
    papers_exact = {normalize_paper_id(x) for x in p_papers} == {normalize_paper_id(x) for x in g_papers}
    complete = len(pairs) == len(g_ev)
    return RecordScore(
        id=str(gold.get("id")), answer_format=fmt, multi_paper=bool(gold.get("multi_paper", len(g_papers) > 1)),
        paper_precision=pp.precision, paper_recall=pp.recall, paper_f1=pp.f1,
        evidence_precision=ep.precision, evidence_recall=ep.recall, evidence_f1=ep.f1,
        answer_score=score, answer_correct=ok, papers_exact=papers_exact, evidence_complete=complete,
        joint_success=papers_exact and complete and ok,
        matched_gold=sorted(j for _, j in pairs), gold_types=[normalize_type(e.get("type", "")) for e in g_ev],
        missing=missing,
    )


_MEANS = ("paper_precision", "paper_recall", "paper_f1", "evidence_precision", "evidence_recall", "evidence_f1",
          "answer_score")


def aggregate(scores: Sequence[RecordScore]) -> dict[str, Any]:
    """Macro averages over records (the headline keys), then breakdowns by format, by single/multi paper, and
    evidence recall by gold type (micro: matched gold items of the type / gold items of the type)."""
    n = len(scores)

    def mean(vals: Iterable[float]) -> float:
        vals = list(vals)
        return sum(vals) / len(vals) if vals else 0.0

    def block(ss: Sequence[RecordScore]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(ss)}
        for k in _MEANS:
            out[k] = mean(getattr(s, k) for s in ss)
        out["answer_accuracy"] = mean(float(s.answer_correct) for s in ss)
        out["joint_success"] = mean(float(s.joint_success) for s in ss)
        return out

    out = block(scores)
    out["missing"] = sum(s.missing for s in scores)
    out["by_format"] = {f: block([s for s in scores if s.answer_format == f])
                        for f in sorted({s.answer_format for s in scores})}
    out["by_papers"] = {name: block([s for s in scores if s.multi_paper == multi])
                        for name, multi in (("single", False), ("multi", True))
                        if any(s.multi_paper == multi for s in scores)}
    by_type: dict[str, list[int]] = {}
    for s in scores:
        for j, t in enumerate(s.gold_types):
            hit = by_type.setdefault(t, [0, 0])
            hit[1] += 1
            hit[0] += j in s.matched_gold
    out["evidence_recall_by_type"] = {t: {"matched": m, "gold": g, "recall": m / g if g else 0.0}
                                      for t, (m, g) in sorted(by_type.items())}
    out["n"] = n
    return out


def score_predictions(gold: Sequence[Mapping[str, Any]], preds: Sequence[Mapping[str, Any]], *,
                      table_threshold: float = TABLE_THRESHOLD, rel_tol: float = REL_TOL) -> dict[str, Any]:
    """Score predictions (matched to gold records by ``id``) and aggregate; extra prediction ids are counted,
    not scored."""
    by_id: dict[str, Mapping[str, Any]] = {}
    for p in preds:
        by_id[str(p.get("id"))] = p
    scores = [score_record(g, by_id.get(str(g.get("id"))), table_threshold=table_threshold, rel_tol=rel_tol)
              for g in gold]
    out = aggregate(scores)
    gold_ids = {str(g.get("id")) for g in gold}
    out["unknown_prediction_ids"] = sorted(set(by_id) - gold_ids)
    out["records"] = [s.to_dict() for s in scores]
    return out
