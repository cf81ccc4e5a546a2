"""Build a DocCite-style citation benchmark by injection: labels come from rules, never from a model.

From QA records with gold evidence pages (MMLongBench-Doc's ``samples.json``
layout: doc_id = PDF file name, question, answer, evidence_pages as a Python
literal such as "[5]", answer_format), every usable record gives three
instances, so the mix is balanced (1/3 each):

- ``supported``: the record's claim, cited to its gold page;
- ``wrong_location``: the same claim, cited to a page that is not gold. Records
  alternate (in a seeded order) between a page inside the +-2 window of a gold
  page ("window", repairable by the verifier) and a page further away
  ("outside"); when one kind has no candidate page the other is used;
- ``unsupported``: the claim with its key value changed, cited to the gold page.
  Int / Float answers: the first number is multiplied by a seeded factor from
  FACTORS (rounded to the original's decimals; 0 becomes a seeded 1..9; a result
  equal to the original is moved by one unit), its formatting (thousands
  separators, "%", surrounding words) kept. Str / List answers: swapped for the
  answer of another record of the same format from another document (seeded
  choice among all answerable records of the dataset; never one that normalises
  to the same text).

The claim (rule-based, no model): ``"<question> — <answer>"``. Trailing
instructions about the answer's form are cut from the question first (a final
sentence starting "Please", "Write", "Give me", "Answer", "Return", "Directly
answer", "Your answer", "The answer", ...; and "e.g., ..." / "for example ..."
tails), and a list answer is written as "a, b and c". Example:
"How many datasets are used for experiments of this paper in all? — 9".

Skipped, with counts in the summary: unanswerable records ("Not answerable"),
records without gold pages, documents missing from the index, records whose gold
pages lie outside the document (known defects of MMLongBench-Doc: 5 questions cite
pages beyond the document's length, 2 more cite page 0), empty-list answers, and — with ``evidence="single"`` (the default) —
records whose evidence spans several pages: a page-level citation can only fully
support a claim whose evidence is on one page (``evidence="any"`` keeps them and
cites a seeded choice among the gold pages).

Split: whole documents go to "calib" (a seeded ``calib_fraction`` of them) or
"test"; the no-model scorer is calibrated on "calib" and measured on "test".
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from trident_local.text import clean_question

SUPPORTED, WRONG_LOCATION, UNSUPPORTED = "supported", "wrong_location", "unsupported"
LABELS: tuple[str, ...] = (SUPPORTED, WRONG_LOCATION, UNSUPPORTED)
FACTORS: tuple[float, ...] = (0.5, 0.75, 1.25, 1.5, 2.0, 3.0)
NOT_ANSWERABLE = "not answerable"
BUILD_WINDOW = 2  # the +-window that "window" wrong-location citations are drawn from


@dataclass
class Instance:
    """One (claim, cited page) to verify, with its deterministic label."""

    instance_id: str
    doc: str  # the document's file name (the dataset's doc_id)
    doc_id: str  # the index's doc_id (content hash)
    n_pages: int
    question: str
    answer: str  # the gold answer
    claim: str  # what is verified
    cited_page: int
    gold_pages: list[int]
    label: str  # supported | wrong_location | unsupported
    location: str | None = None  # wrong_location only: "window" | "outside"
    perturbation: dict[str, Any] | None = None  # unsupported only: {"kind", "from", "to"}
    answer_format: str = ""
    evidence_sources: list[str] = field(default_factory=list)
    record: int = 0  # index of the record in the dataset file
    split: str = "test"  # "calib" | "test"
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Instance:
        return cls(**d)


@dataclass
class BuildSummary:
    dataset: str
    seed: int
    evidence: str
    calib_fraction: float
    records: int
    used_records: int
    instances: int
    by_label: dict[str, int]
    by_split: dict[str, int]
    by_location: dict[str, int]
    skipped: dict[str, int]
    defects: list[dict[str, Any]]  # records with gold pages outside 1..n_pages, listed
    claim_template: str = "<question without answer-form instructions> — <answer>"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- claims -------------------------------------------------------------------------------------------


def answer_text(answer: str, answer_format: str) -> str | None:
    """The answer as words ("a, b and c" for lists); None for an empty list."""
    a = answer.strip()
    if answer_format == "List" or (a.startswith("[") and a.endswith("]")):
        try:
            items = ast.literal_eval(a)
        except (ValueError, SyntaxError):
            items = None
        if isinstance(items, (list, tuple)):
            words = [str(x).strip() for x in items if str(x).strip()]
            if not words:
                return None
            return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return a or None


def make_claim(question: str, answer: str) -> str:
    """The declarative claim for a record: "<question> — <answer>"."""
    return f"{clean_question(question)} — {answer}"


# -- perturbation -------------------------------------------------------------------------------------
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?")


def perturb_number(answer: str, rng: random.Random) -> tuple[str, str, str] | None:
    """Change the first number in ``answer`` by a seeded factor; (new answer, old number, new number)."""
    m = _NUMBER.search(answer)
    if not m:
        return None
    integer, decimals = m.group(1), m.group(2) or ""
    commas = "," in integer
    value = Decimal(integer.replace(",", "") + ("." + decimals if decimals else ""))
    quantum = Decimal(1).scaleb(-len(decimals))
    if value == 0:
        new = Decimal(rng.randint(1, 9)) * (quantum if decimals else 1)
    else:
        factor = Decimal(str(rng.choice(FACTORS)))
        new = (value * factor).quantize(quantum, rounding=ROUND_HALF_UP)
        if new == value or new <= 0:
            new = value + quantum * rng.choice((1, 2, 3))
    if decimals:
        text = f"{new:,.{len(decimals)}f}" if commas else f"{new:.{len(decimals)}f}"
    else:
        text = f"{int(new):,}" if commas else str(int(new))
    return answer[: m.start()] + text + answer[m.end() :], m.group(0), text


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


# -- building -----------------------------------------------------------------------------------------
def _rng(seed: int, *key: Any) -> random.Random:
    h = hashlib.sha256(("\x1f".join(map(str, (seed, *key)))).encode()).hexdigest()
    return random.Random(int(h[:16], 16))


def parse_pages(value: Any) -> list[int]:
    """Evidence pages from the dataset's Python-literal string ("[5]") or a list."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value) if value.strip() else []
        except (ValueError, SyntaxError):
            return []
    if isinstance(value, int):
        value = [value]
    return [int(p) for p in value if isinstance(p, int) or (isinstance(p, str) and p.isdigit())]


def _sources(value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return [value]
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def build_instances(
    records: Sequence[dict[str, Any]],
    doc_pages: dict[str, tuple[str, int]],
    *,
    seed: int = 0,
    evidence: str = "single",
    calib_fraction: float = 0.3,
    dataset: str = "",
) -> tuple[list[Instance], BuildSummary]:
    """Instances and a summary from dataset ``records``.

    ``doc_pages`` maps a record's doc (file name) to (index doc_id, number of pages);
    documents missing from it are skipped.
    """
    if evidence not in ("single", "any"):
        raise ValueError("evidence must be 'single' or 'any'")
    skipped: Counter[str] = Counter()
    beyond: list[dict[str, Any]] = []
    usable: list[tuple[int, dict[str, Any], list[int], str]] = []
    for ri, r in enumerate(records):
        ans = str(r.get("answer", "")).strip()
        if ans.lower() == NOT_ANSWERABLE or r.get("answer_format") == "None":
            skipped["not answerable"] += 1
            continue
        gold = sorted(set(parse_pages(r.get("evidence_pages", []))))
        if not gold:
            skipped["no gold pages"] += 1
            continue
        if r.get("doc_id") not in doc_pages:
            skipped["document not in the index"] += 1
            continue
        n = doc_pages[r["doc_id"]][1]
        if any(p > n for p in gold):
            skipped["gold page beyond the document's length (dataset defect)"] += 1
            beyond.append({"record": ri, "doc": r["doc_id"], "evidence_pages": gold, "n_pages": n})
            continue
        if any(p < 1 for p in gold):
            skipped["gold page 0 (not a 1-based page; dataset defect)"] += 1
            beyond.append({"record": ri, "doc": r["doc_id"], "evidence_pages": gold, "n_pages": n})
            continue
        if evidence == "single" and len(gold) > 1:
            skipped["evidence on several pages"] += 1
            continue
        words = answer_text(ans, r.get("answer_format", ""))
        if words is None:
            skipped["empty-list answer"] += 1
            continue
        usable.append((ri, r, gold, words))

    # Swap pools for Str / List answers: every answerable record of the dataset donates its answer
    # (its document need not be indexed): (format) -> [(doc, answer words)], sorted for determinism.
    pools: dict[str, list[tuple[str, str]]] = {}
    for r in records:
        donor = str(r.get("answer", "")).strip()
        words = answer_text(donor, r.get("answer_format", "")) if donor.lower() != NOT_ANSWERABLE else None
        if words:
            pools.setdefault(r.get("answer_format", ""), []).append((str(r.get("doc_id")), words))
    for v in pools.values():
        v.sort()

    docs = sorted({r["doc_id"] for _, r, _, _ in usable})
    order = docs[:]
    random.Random(seed).shuffle(order)
    n_calib = round(len(order) * calib_fraction)
    calib_docs = set(order[:n_calib])
    # Window/outside alternation over a seeded order of the records.
    rec_order = [ri for ri, _, _, _ in usable]
    random.Random(seed + 1).shuffle(rec_order)
    prefer_window = {ri: (k % 2 == 0) for k, ri in enumerate(rec_order)}

    instances: list[Instance] = []
    for ri, r, gold, words in usable:
        doc = r["doc_id"]
        doc_id, n = doc_pages[doc]
        rng = _rng(seed, ri, doc)
        cite_gold = gold[0] if len(gold) == 1 else rng.choice(gold)
        claim = make_claim(r["question"], words)
        # wrong location
        inside = sorted({p for g in gold for p in range(g - BUILD_WINDOW, g + BUILD_WINDOW + 1)
                         if 1 <= p <= n and p not in gold})
        outside = sorted(p for p in range(1, n + 1) if min(abs(p - g) for g in gold) > BUILD_WINDOW)
        want = "window" if prefer_window[ri] else "outside"
        pool = inside if want == "window" else outside
        if not pool:
            want, pool = ("outside", outside) if want == "window" else ("window", inside)
        if not pool:
            skipped["no non-gold page to cite"] += 1
            continue
        wrong_page = rng.choice(pool)
        # unsupported
        fmt = r.get("answer_format", "")
        pert = perturb_number(words, rng) if fmt in ("Int", "Float") else None
        if pert is not None:
            new_words, old, new = pert
            perturbation = {"kind": "number", "from": old, "to": new}
        else:
            cands = [w for d, w in pools.get(fmt, []) if d != doc and _norm(w) != _norm(words)]
            if not cands:
                skipped["no perturbation possible"] += 1
                continue
            new_words = rng.choice(cands)
            perturbation = {"kind": "swap", "from": words, "to": new_words}
        base = {
            "doc": doc, "doc_id": doc_id, "n_pages": n, "question": r["question"], "answer": str(r["answer"]),
            "gold_pages": gold, "answer_format": fmt, "evidence_sources": _sources(r.get("evidence_sources", [])),
            "record": ri, "split": "calib" if doc in calib_docs else "test", "seed": seed,
        }
        instances += [
            Instance(instance_id=f"r{ri:04d}-s", claim=claim, cited_page=cite_gold, label=SUPPORTED, **base),
            Instance(instance_id=f"r{ri:04d}-w", claim=claim, cited_page=wrong_page, label=WRONG_LOCATION,
                     location=want, **base),
            Instance(instance_id=f"r{ri:04d}-u", claim=make_claim(r["question"], new_words), cited_page=cite_gold,
                     label=UNSUPPORTED, perturbation=perturbation, **base),
        ]
    summary = BuildSummary(
        dataset=dataset,
        seed=seed,
        evidence=evidence,
        calib_fraction=calib_fraction,
        records=len(records),
        used_records=len(instances) // 3,
        instances=len(instances),
        by_label=dict(Counter(i.label for i in instances)),
        by_split=dict(Counter(i.split for i in instances)),
        by_location=dict(Counter(i.location for i in instances if i.location)),
        skipped=dict(skipped),
        defects=beyond,
    )
    return instances, summary


def build_from_index(
    dataset: str | Path, index: Any, *, seed: int = 0, evidence: str = "single", calib_fraction: float = 0.3
) -> tuple[list[Instance], BuildSummary]:
    """Read a samples.json-style dataset and build instances for the documents of ``index``."""
    from trident_local.errors import TridentError

    try:
        records = json.loads(Path(dataset).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise TridentError(f"cannot read the dataset {dataset}: {e}") from e
    if not isinstance(records, list):
        raise TridentError(f"{dataset}: expected a JSON list of QA records")
    store = index.store if hasattr(index, "store") else index
    doc_pages: dict[str, tuple[str, int]] = {}
    for e in store.entries():
        doc_pages.setdefault(e.file_name, (e.doc_id, e.n_pages))
    return build_instances(records, doc_pages, seed=seed, evidence=evidence, calib_fraction=calib_fraction,
                           dataset=str(dataset))


def write_instances(path: str | Path, instances: Sequence[Instance], summary: BuildSummary) -> Path:
    """Write INSTANCES.jsonl and its summary next to it (INSTANCES.meta.json); returns the summary path."""
    from trident_local.atomic import atomic_write_text

    path = Path(path)
    atomic_write_text(path, "".join(json.dumps(i.to_dict(), ensure_ascii=False) + "\n" for i in instances))
    meta = path.with_suffix(".meta.json")
    atomic_write_text(meta, json.dumps(summary.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return meta


def read_instances(path: str | Path) -> list[Instance]:
    from trident_local.errors import TridentError

    out = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise TridentError(f"cannot read {path}: {e}") from e
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Instance.from_dict(json.loads(line)))
        except (json.JSONDecodeError, TypeError) as e:
            raise TridentError(f"{path}:{n}: not an instance ({e})") from e
    return out
