"""MMLongBench-Doc generalized accuracy: score an extracted short answer by answer format.

Pure functions that follow the benchmark's official evaluation rules (its
``eval_score`` / ``eval_acc_and_f1``), kept quirk-for-quirk so our numbers are
comparable with published ones:

- Int: ``int(gold) == int(float(pred))``; anything unparsable scores 0.
- Float: cleaned of ``$``/``%``/parentheses; correct when within 1% relative of
  gold, gold/100 or gold*100 (percent vs fraction), or equal after rounding to the
  shorter precision (at least 2 decimals).
- Str (and None, whose gold is "Not answerable"): cleaned, then exact equality
  for strings that look like URLs, code files, "page ...", phone numbers, times,
  ISO dates or e-mails; otherwise ANLS with scores <= 0.5 set to 0.
- List: parsed from "[...]"; lengths must match; both sides cleaned and sorted;
  numbers / exact-match strings need the whole list equal, otherwise the score
  is the minimum ANLS over the sorted pairs.

Official quirks kept on purpose: the unit stripping of "mile(s)"/"million" in
``get_clean_string`` has no effect (its result is discarded upstream), and the
F1's precision divides the answerable questions' score sum by the number of
predictions that are not exactly "Not answerable".
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

NOT_ANSWERABLE = "Not answerable"
ANLS_THRESHOLD = 0.5
FORMATS = ("Int", "Float", "Str", "List", "None")


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert / delete / substitute, unit costs)."""
    if len(a) > len(b):
        a, b = b, a
    prev = list(range(len(a) + 1))
    for j, cb in enumerate(b, start=1):
        cur = [j]
        for i, ca in enumerate(a, start=1):
            cur.append(prev[i - 1] if ca == cb else 1 + min(prev[i - 1], prev[i], cur[-1]))
        prev = cur
    return prev[-1]


def anls(gold: str, pred: str, threshold: float = ANLS_THRESHOLD) -> float:
    """1 - normalized edit distance, set to 0 when <= ``threshold`` (case-sensitive, as the official code)."""
    length = max(len(gold), len(pred))
    value = 1.0 - (levenshtein(gold, pred) / length if length else 0.0)
    return 0.0 if value <= threshold else value


def clean_string(s: object) -> str:
    """Lower-case; drop parenthesized parts, surrounding quotes, a leading "$" and a trailing "%"."""
    s = str(s).lower().strip()
    s = re.sub(r"\s*\([^)]*\)", "", s).strip()
    s = re.sub(r"^['\"]|['\"]$", "", s).strip()
    s = s.lstrip("$").strip()
    return s.rstrip("%").strip()


_PHONE = re.compile(r"\b\d+(-\d+|\s\d+)?\b")
_YMD = re.compile(r"\b\d{4}[-\s]\d{2}[-\s]\d{2}\b")
_YM = re.compile(r"\b\d{4}[-\s]\d{2}\b")
_EMAIL = re.compile(r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}")


def needs_exact_match(s: str) -> bool:
    """Scored by equality, not ANLS: URLs, code files, "page ...", phone numbers, times, dates, e-mails."""
    return bool(
        "https://" in s
        or s.endswith((".py", "ipynb"))
        or s.startswith("page")
        or _PHONE.fullmatch(s)
        or "a.m." in s
        or "p.m." in s
        or _YMD.fullmatch(s)
        or _YM.fullmatch(s)
        or _EMAIL.fullmatch(s)
    )


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _decimals(x: float) -> int:
    text = str(x)
    return len(text.split(".")[-1]) if "." in text else 3


def float_equal(gold: float, pred: float) -> bool:
    """Within 1% of gold, gold/100 or gold*100, or equal when rounded to the coarser precision (>= 2)."""
    for ref in (gold / 100, gold, gold * 100):
        if math.isclose(ref, pred, rel_tol=0.01):
            return True
        digits = max(min(_decimals(pred), _decimals(ref)), 2)
        if round(pred, digits) == round(ref, digits):
            return True
    return False


def _as_list(value: object) -> list:
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            return [value]
        return list(parsed) if isinstance(parsed, list | tuple) else [parsed]
    return [value]


def score_int(gold: object, pred: object) -> float:
    try:
        return float(int(str(gold).strip()) == int(float(str(pred).strip())))
    except (ValueError, OverflowError):
        return 0.0


def score_float(gold: object, pred: object) -> float:
    try:
        g = float(clean_string(gold))
        p = float(clean_string(pred))
    except ValueError:
        return 0.0
    return float(float_equal(g, p))


def score_str(gold: object, pred: object) -> float:
    g, p = clean_string(gold), clean_string(pred)
    if needs_exact_match(g):
        return float(g == p)
    return anls(g, p)


def score_list(gold: object, pred: object) -> float:
    gl, pl = _as_list(gold), _as_list(pred)
    if len(gl) != len(pl) or not gl:
        return 0.0
    gs = sorted(clean_string(x) for x in gl)
    ps = sorted(clean_string(x) for x in pl)
    if _is_float(gs[0]) or needs_exact_match(gs[0]):
        return float("-".join(gs) == "-".join(ps))
    return min(anls(g, p) for g, p in zip(gs, ps, strict=True))


def score_answer(gold: object, pred: object, answer_format: str) -> float:
    """Score one prediction against its gold answer for the benchmark's ``answer_format``."""
    if answer_format == "Int":
        return score_int(gold, pred)
    if answer_format == "Float":
        return score_float(gold, pred)
    if answer_format in ("Str", "None"):
        return score_str(gold, pred)
    return score_list(gold, pred)


@dataclass
class ScoredSample:
    """What accuracy and F1 need from one question."""

    gold: str
    pred: str
    score: float


def accuracy(samples: Sequence[ScoredSample]) -> float:
    return sum(s.score for s in samples) / len(samples) if samples else 0.0


def f1(samples: Sequence[ScoredSample]) -> float:
    """The benchmark's F1: recall over answerable golds, precision over predictions not "Not answerable"."""
    answerable = [s for s in samples if s.gold != NOT_ANSWERABLE]
    predicted = [s for s in samples if s.pred != NOT_ANSWERABLE]
    if not answerable or not predicted:
        return 0.0
    hit = sum(s.score for s in answerable)
    recall, precision = hit / len(answerable), hit / len(predicted)
    return 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0


def breakdown(samples: Sequence[ScoredSample], keys: Sequence[Iterable[str]]) -> dict[str, dict[str, float]]:
    """Accuracy and count per key; a sample with several keys (evidence sources) counts under each."""
    groups: dict[str, list[ScoredSample]] = {}
    for s, ks in zip(samples, keys, strict=True):
        for k in ks:
            groups.setdefault(k, []).append(s)
    return {k: {"n": len(v), "accuracy": accuracy(v)} for k, v in sorted(groups.items())}
