"""Self-verification of an answer before it is returned: its claims checked against the pages it cites.

Every answer (any strategy, any model) goes through the AtomCite verifier
(:mod:`trident_local.verify`). An answer that carries page markers ("... [p. 4]")
is verified claim by claim; otherwise its one claim is "<question> - <answer>"
cited to the page of its support (or its first cited page), the same claim form
the verifier's no-model scorer was calibrated on. A supported claim is kept; an
unsupported one is re-pointed to a page within +-``window`` when the support is
there (the answer's support page and citation order follow), or flagged. Nothing
is deleted from the answer: the verdict, flags and the cost (model calls,
seconds, pages judged) travel with it.

The judges: the index runtime's chat model (text channel, plus the image channel
when it takes images), or the no-model support scorer under the "none" profile.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from trident_local.generate.records import Answer
from trident_local.verify.floor import no_content

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.verify.pipeline import Verifier

# status of the whole answer, worst claim first
SUPPORTED, REPOINTED, FLAGGED, UNVERIFIED, NOTHING = "supported", "re-pointed", "flagged", "unverified", "nothing to verify"


@dataclass
class CheckedClaim:
    claim: str
    cited_page: int
    verdict: str  # the verifier's merged verdict on the cited page
    action: str  # keep | fix-page | flag | remove (remove is reported as flagged: the answer keeps it)
    new_page: int | None = None
    flags: list[str] = field(default_factory=list)
    why: str = ""
    support_score: float | None = None  # the no-model scorer's, beside a model judge's verdict


@dataclass
class SelfCheck:
    status: str
    claims: list[CheckedClaim]
    judges: dict[str, str]
    model_calls: int
    seconds: float
    pages_judged: int
    window: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verifier_for(index: Index, window: int = 2) -> Verifier:
    """The verifier for the index runtime's answers: its chat model as judge (the no-model scorer
    under "none"), built once per index and kept on it."""
    from trident_local.verify.pipeline import Verifier

    v = getattr(index, "_self_check_verifier", None)
    if v is None:
        v = Verifier.from_index(index, window=window)
        index._self_check_verifier = v
    v.window = window
    return v


def _claims(answer: Answer) -> tuple[str, list[Any]]:
    """(doc_id, claims) of an answer: its page markers when it has them, else one question-answer claim."""
    from trident_local.verify.parse import parse_answer
    from trident_local.verify.types import Claim

    if not answer.citations:
        return "", []
    page = answer.support_page or answer.citations[0].page
    doc_id = next((c.doc_id for c in answer.citations if c.page == page), answer.citations[0].doc_id)
    try:
        parsed = parse_answer(answer.text)
        if parsed.claims:
            return doc_id, parsed.claims
    except ValueError:
        pass
    return doc_id, [Claim(f"{answer.question.strip()} - {answer.text.strip()}", [page], "c1", 0, "given",
                          answer=answer.text.strip())]


def _status(claims: list[CheckedClaim]) -> str:
    if not claims:
        return NOTHING
    if any(c.action in ("flag", "remove") and "unverified" in c.flags for c in claims):
        return UNVERIFIED
    if any(c.action in ("flag", "remove") for c in claims):
        return FLAGGED
    if any(c.action == "fix-page" for c in claims):
        return REPOINTED
    return SUPPORTED


def self_check(index: Index, answer: Answer, *, window: int = 2) -> SelfCheck:
    """Verify ``answer``'s claims against its cited pages; re-point its support page when the verifier does."""
    t0 = time.perf_counter()
    if not answer.answerable:
        return SelfCheck(NOTHING, [], {}, 0, 0.0, 0, window)
    rechecked = recheck_computation(index, answer, window)
    if rechecked is not None:
        return rechecked
    empty = no_content(answer.text)
    if empty and answer.citations:  # nothing to judge: flagged before any judge is asked
        page = answer.support_page or answer.citations[0].page
        claim = CheckedClaim(f"{answer.question.strip()} - {answer.text.strip()}", page, "unsupported", "flag",
                             flags=["no-content"], why=empty)
        return SelfCheck(FLAGGED, [claim], {"floor": "no-model content check"}, 0,
                         round(time.perf_counter() - t0, 4), 0, window)
    doc_id, claims = _claims(answer)
    if not claims:
        return SelfCheck(NOTHING, [], {}, 0, 0.0, 0, window)
    v = verifier_for(index, window)
    calls0, judged0 = v.model_calls, v.pages_judged
    results = [r for group in v.verify_claims([(doc_id, c) for c in claims]) for r in group]
    checked = []
    for r in results:
        flags = list(r.flags)
        if r.action == "remove":
            flags.append("unsupported")  # the answer keeps the claim; the reader sees it flagged
        why = r.floor or next((j.rationale or (j.error or "") for j in r.judgements if j.rationale or j.error), "")
        score = next((j.support_score for j in r.judgements if j.support_score is not None), None)
        checked.append(CheckedClaim(r.claim.text, r.cited_page, r.verdict, r.action, r.new_page, flags, why, score))
    _repoint(answer, doc_id, checked)
    return SelfCheck(_status(checked), checked, v.judges, v.model_calls - calls0,
                     round(time.perf_counter() - t0, 4), v.pages_judged - judged0, window)


def recheck_computation(index: Index, answer: Answer, window: int = 2) -> SelfCheck | None:
    """A value computed from cited cells ("6.25 = 16,830 / ((2,667 + 2,721) / 2)") is printed on no page,
    so no judge of page support can confirm it; it is checked instead by re-reading each cited cell on its
    page (the box prints the value) and redoing the arithmetic. None for any other answer."""
    from trident_local.generate.formula import operand_numbers, recompute
    from trident_local.regions.attach import layout_of
    from trident_local.regions.locate import norm_number, numbers

    cells = [(c.doc_id, r) for c in answer.citations for r in c.regions if r.get("kind") == "cell"]
    holds = recompute(answer.computation) if answer.computation and cells else None
    if holds is None:
        return None
    t0 = time.perf_counter()
    printed = set()
    missing = []
    for doc_id, r in cells:
        lay = layout_of(index, doc_id, r["page"])
        box = r["bbox"]
        on_page = [c for row in lay.rows for c in row.cells
                   if all(abs(a - b) <= 1.0 for a, b in zip(c.bbox, box, strict=True))]
        if any(set(numbers(r["text"])) & set(numbers(c.text)) for c in on_page):
            printed |= set(numbers(r["text"]))
        else:
            missing.append(f"{r['text']} (p. {r['page']})")
    unread = [n for n in operand_numbers(answer.computation) if norm_number(n) not in printed]
    ok = holds and not missing and not unread
    why = ("every operand is printed in its cited cell and the arithmetic gives the answer" if ok else
           "; ".join(x for x in (
               "" if holds else "the arithmetic does not give the answer",
               f"not printed where cited: {', '.join(missing)}" if missing else "",
               f"operands not cited: {', '.join(unread)}" if unread else "") if x))
    page = answer.support_page or answer.citations[0].page
    claim = CheckedClaim(f"{answer.question.strip()} - {answer.text.strip()}", page,
                         "supported" if ok else "unsupported", "keep" if ok else "flag",
                         flags=["computation-rechecked"], why=why)
    pages = {(d, r["page"]) for d, r in cells}
    return SelfCheck(SUPPORTED if ok else FLAGGED, [claim], {"computation": "cited cells re-read, arithmetic redone"},
                     0, round(time.perf_counter() - t0, 4), len(pages), window)


def _repoint(answer: Answer, doc_id: str, checked: list[CheckedClaim]) -> None:
    """Move the support page (and the citation of that page, first) to the page the verifier found."""
    from trident_local.generate.records import Citation

    fix = next((c for c in checked if c.action == "fix-page" and c.new_page is not None), None)
    if fix is None or fix.new_page is None:
        return
    answer.support_page = fix.new_page
    if not any(c.doc_id == doc_id and c.page == fix.new_page for c in answer.citations):
        first = answer.citations[0]
        answer.citations.insert(0, Citation(doc_id, first.file_name if first.doc_id == doc_id else doc_id,
                                            fix.new_page))
    answer.citations.sort(key=lambda c: not (c.doc_id == doc_id and c.page == fix.new_page))
