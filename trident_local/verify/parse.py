"""Parse an answer into (claim, cited pages): citation markers and sentences, or a JSON claim list.

Text answers. A citation marker is a bracketed page reference:

- square brackets: ``[p. 12]``, ``[pp. 3-5]``, ``[page 12]``, ``[Pages 3, 5]``, ``[12]``,
  ``[12, 14]``, ``[3-4]``, ``[p12]``, ``[p. 3; p. 5]``, ``[see p. 4]``, ``[report.pdf, p. 4]``;
- parentheses (a page word is required, so "(12)" stays a number): ``(page 12)``,
  ``(p. 12)``, ``(pp. 3 and 5)``, ``(see page 7)``, ``(Source: page 7)``;
- also full-width ``【12】`` and curly ``{p. 12}``.

Ranges ("3-5", "3 to 5") expand to every page when they span at most ``MAX_RANGE``
pages; longer ranges keep their two ends (and a warning). A page word alone
("[p.]") or a page 0 is not a citation.

Sentences. The text (markers removed) is split into sentences at ``.!?`` followed
by white space (not after abbreviations such as "e.g." or "Fig."), at blank lines
and at list items. A marker belongs to the sentence it sits in; a marker right
after a sentence's final punctuation ("... grew. [p. 3]") belongs to that
sentence. A sentence with markers at several places ("A rose [p. 3] and B fell
[p. 4].") is split at the markers into one claim per marker, each citing its own
pages; text after the last marker joins the last claim. Sentences without a
marker are not verified; they are reported as uncited and kept unchanged.

JSON answers: ``{"answer": "...", "claims": [{"text": "...", "pages": [12]}]}``
(``page`` for one page and page strings like "p. 12" are accepted). Without
``claims`` the ``answer`` string is parsed as text.

Optional atomic decomposition (:func:`decompose`) asks a chat model to split
each claim into atomic claims; each inherits its claim's pages. The model's
output is untrusted: anything that is not a JSON list of short strings keeps the
original claim and records a warning.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from trident_local.errors import ModelOutputError
from trident_local.models.structured import parse_object
from trident_local.text import sentence_spans
from trident_local.verify.types import Claim

MAX_RANGE = 10  # a range of more pages than this keeps only its two ends

_PAGE_WORD = r"(?:pages?|pgs?\.?|pp?\.?)"
_NUM = r"\d{1,5}"
_RANGE_SEP = r"\s*(?:-|–|—|to)\s*"
_ITEM = rf"(?:{_PAGE_WORD}\s*)?{_NUM}(?:{_RANGE_SEP}(?:{_PAGE_WORD}\s*)?{_NUM})?"
_LIST_SEP = r"\s*(?:,|;|&|\band\b)\s*"
_PREFIX = r"(?:(?:see|source|sources|cf\.?|ref\.?|cited|citation|evidence)\s*:?\s*)?"
_DOCNAME = r"(?:[^,;\[\](){}]{1,80}?\.pdf\s*[,:]?\s*)?"
_BODY = re.compile(rf"^\s*{_PREFIX}{_DOCNAME}(?P<items>{_ITEM}(?:{_LIST_SEP}{_ITEM})*)\s*\.?\s*$", re.I)
_ITEM_RE = re.compile(rf"(?:(?P<w1>{_PAGE_WORD})\s*)?(?P<a>{_NUM})(?:{_RANGE_SEP}(?:{_PAGE_WORD}\s*)?(?P<b>{_NUM}))?", re.I)
_HAS_PAGE_WORD = re.compile(rf"(?<![a-z]){_PAGE_WORD}(?=\s*\d)", re.I)
_GROUPS = re.compile(r"\[(?P<sq>[^\[\]\n]{1,120})\]|\((?P<par>[^()\n]{1,120})\)|【(?P<fw>[^【】\n]{1,120})】|\{(?P<cu>[^{}\n]{1,120})\}")



@dataclass
class Marker:
    start: int
    end: int
    pages: list[int]


@dataclass
class Sentence:
    """A sentence of the answer: its text without markers, its original text, its claims.

    ``raw`` is the sentence as written (markers included) and ``gap`` the text between
    it and the next sentence, so an answer whose citations all stand is rebuilt
    unchanged. ``prefix`` is a list bullet ("- ", "2. ") kept out of the claim text.
    """

    text: str
    raw: str = ""
    gap: str = " "
    prefix: str = ""
    claims: list[int] = field(default_factory=list)  # indexes into ParsedAnswer.claims


@dataclass
class ParsedAnswer:
    format: str  # "text" | "json"
    claims: list[Claim]
    sentences: list[Sentence] = field(default_factory=list)
    original: Any = None
    warnings: list[str] = field(default_factory=list)

    @property
    def uncited(self) -> list[str]:
        return [s.text for s in self.sentences if not s.claims]

    def pairs(self) -> list[tuple[Claim, int]]:
        """(claim, cited page) pairs in answer order."""
        return [(c, p) for c in self.claims for p in c.pages]


# -- markers --------------------------------------------------------------------------------------------
def parse_marker(body: str, *, bracket: str = "[") -> list[int] | None:
    """Pages named by a marker's inside, or None when it is not a page citation."""
    m = _BODY.match(body)
    if not m:
        return None
    if bracket == "(" and not _HAS_PAGE_WORD.search(body):
        return None  # "(12)" or "(2019)" is a number, not a citation
    pages: list[int] = []
    for it in _ITEM_RE.finditer(m.group("items")):
        a = int(it.group("a"))
        b = int(it.group("b")) if it.group("b") else None
        if b is None:
            pages.append(a)
        elif b < a:
            pages += [a, b]
        elif b - a + 1 <= MAX_RANGE:
            pages += list(range(a, b + 1))
        else:
            pages += [a, b]
    pages = [p for p in dict.fromkeys(pages) if p >= 1]
    return pages or None


def find_markers(text: str) -> list[Marker]:
    """Every page-citation marker in ``text``, in order."""
    out = []
    for m in _GROUPS.finditer(text):
        kind = next(k for k in ("sq", "par", "fw", "cu") if m.group(k) is not None)
        pages = parse_marker(m.group(kind), bracket="(" if kind == "par" else "[")
        if pages:
            out.append(Marker(m.start(), m.end(), pages))
    return out


def format_marker(pages: list[int]) -> str:
    """The canonical marker written into corrected answers: "[p. 3]", "[pp. 3, 5]"."""
    if not pages:
        return ""
    if len(pages) == 1:
        return f"[p. {pages[0]}]"
    return "[pp. " + ", ".join(str(p) for p in pages) + "]"


# -- sentences ------------------------------------------------------------------------------------------
def _clean(s: str) -> str:
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\s+([.,;:!?])", r"\1", s)
    return s.strip(" ,;")


_BULLET = re.compile(r"^(?:[-*•]|\d{1,2}[.)])\s+")


def parse_text(text: str) -> ParsedAnswer:
    """Claims from a text answer with citation markers (see the module docstring for the rules)."""
    markers = find_markers(text)
    # Remove the markers; remember where each one sat in the cleaned text.
    parts, positions, last, removed = [], [], 0, 0
    for mk in markers:
        parts.append(text[last : mk.start])
        positions.append(mk.start - removed)
        removed += mk.end - mk.start
        last = mk.end
    parts.append(text[last:])
    clean = "".join(parts)
    spans = sentence_spans(clean)
    parsed = ParsedAnswer(format="text", claims=[], original=text)
    if not spans:
        return parsed
    # A marker belongs to the last sentence that starts before it (so one right after a sentence's
    # final punctuation belongs to that sentence); markers before the first sentence go to it.
    owner = [max([i for i, (a, _) in enumerate(spans) if a < pos], default=0) for pos in positions]

    def to_raw(c: int, si: int) -> int:  # clean offset -> original offset (markers of earlier sentences skipped)
        return c + sum(mk.end - mk.start for k, mk in enumerate(markers)
                       if positions[k] < c or (positions[k] == c and owner[k] < si))

    raw_spans = []
    for si, (a, b) in enumerate(spans):
        own = [mk for k, mk in enumerate(markers) if owner[k] == si]
        ra = min([to_raw(a, si), *(mk.start for mk in own)])
        rb = max([to_raw(b, si) if b < len(clean) else len(text), *(mk.end for mk in own)])
        raw_spans.append((ra, rb))
    for si, (a, b) in enumerate(spans):
        ra, rb = raw_spans[si]
        gap = text[rb : raw_spans[si + 1][0]] if si + 1 < len(spans) else text[rb:]
        body = _clean(clean[a:b])
        bullet = _BULLET.match(body)
        prefix = bullet.group(0) if bullet else ""
        sent = Sentence(text=body, raw=text[ra:rb].strip(), gap=gap, prefix=prefix)
        mine = [(positions[k], markers[k].pages) for k in range(len(markers)) if owner[k] == si]
        # Markers strictly inside the sentence with words after them cut it into one claim per marker.
        inner = sorted({p for p, _ in mine if a < p < b and re.search(r"\w", clean[p:b])})
        bounds = [a, *inner, b]
        seg_pages: list[list[int]] = [[] for _ in range(len(bounds) - 1)]
        for p, pages in mine:
            seg_pages[sum(1 for c in inner if c < p)] += pages
        segments: list[tuple[str, list[int]]] = []
        for k in range(len(bounds) - 1):
            seg_text = clean[bounds[k] : bounds[k + 1]]
            if segments and not seg_pages[k]:  # uncited tail joins the claim before it
                segments[-1] = (segments[-1][0] + seg_text, segments[-1][1])
            elif segments and not segments[-1][1]:  # uncited head joins the first cited claim
                segments[-1] = (segments[-1][0] + seg_text, seg_pages[k])
            else:
                segments.append((seg_text, list(seg_pages[k])))
        for seg_text, pages in segments:
            seg_text = _BULLET.sub("", _clean(seg_text))
            pages = list(dict.fromkeys(pages))
            if not pages or not seg_text:
                continue
            sent.claims.append(len(parsed.claims))
            parsed.claims.append(
                Claim(text=seg_text, pages=pages, claim_id=f"c{len(parsed.claims) + 1}", sentence=si, source="marker")
            )
        parsed.sentences.append(sent)
    return parsed


# -- JSON -----------------------------------------------------------------------------------------------
def _pages_of(value: Any) -> list[int]:
    vals = value if isinstance(value, list) else [value]
    out: list[int] = []
    for v in vals:
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, float) and v.is_integer():
            out.append(int(v))
        elif isinstance(v, str):
            got = parse_marker(v.strip().strip("[]()"))
            if got:
                out += got
    return [p for p in dict.fromkeys(out) if p >= 1]


def _regions_of(value: Any) -> tuple[list[dict[str, Any]], int]:
    """The well-formed boxes of a claim's ``regions`` ({"page": int, "bbox": [x0, y0, x1, y1]}) and how
    many were not."""
    if not isinstance(value, list):
        return [], int(value is not None)
    good = []
    for r in value:
        ok = (isinstance(r, dict) and isinstance(r.get("page"), int) and r["page"] >= 1
              and isinstance(r.get("bbox"), list) and len(r["bbox"]) == 4
              and all(isinstance(v, int | float) for v in r["bbox"]))
        if ok:
            good.append({**r, "bbox": [float(v) for v in r["bbox"]]})
    return good, len(value) - len(good)


def parse_json(obj: dict[str, Any]) -> ParsedAnswer:
    """Claims from ``{"answer": ..., "claims": [{"text": ..., "pages": [...]}]}``."""
    if not isinstance(obj, dict):
        raise ValueError("a JSON answer must be an object with 'claims' (or 'answer')")
    claims_in = obj.get("claims")
    if claims_in is None:
        answer = obj.get("answer")
        if not isinstance(answer, str):
            raise ValueError("a JSON answer needs a 'claims' list or an 'answer' string")
        parsed = parse_text(answer)
        parsed.format, parsed.original = "json", obj
        return parsed
    if not isinstance(claims_in, list):
        raise ValueError("'claims' must be a list of {\"text\": ..., \"pages\": [...]} objects")
    parsed = ParsedAnswer(format="json", claims=[], original=obj)
    for i, c in enumerate(claims_in):
        if isinstance(c, str):
            c = {"text": c}
        if not isinstance(c, dict) or not isinstance(c.get("text"), str) or not c["text"].strip():
            parsed.warnings.append(f"claim {i + 1}: not an object with a 'text' string; skipped")
            continue
        pages = _pages_of(c.get("pages", c.get("page", [])))
        regions, bad = _regions_of(c.get("regions"))
        if bad:
            parsed.warnings.append(f"claim {i + 1}: {bad} region(s) without a page and a 4-number bbox; ignored")
        sent = Sentence(text=c["text"].strip(), gap="\n")
        if pages:
            sent.claims.append(len(parsed.claims))
            parsed.claims.append(
                Claim(text=c["text"].strip(), pages=pages, claim_id=f"c{len(parsed.claims) + 1}", sentence=i,
                      source="json", regions=regions)
            )
        else:
            parsed.warnings.append(f"claim {i + 1} cites no page; not verified")
        parsed.sentences.append(sent)
    return parsed


def parse_answer(answer: str | dict[str, Any]) -> ParsedAnswer:
    """Parse a text answer, a JSON object, or a string holding a JSON object."""
    if isinstance(answer, dict):
        return parse_json(answer)
    stripped = answer.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return parse_json(obj)
    return parse_text(answer)


# -- atomic decomposition (optional, with a chat model) -------------------------------------------------
DECOMPOSE_SCHEMA = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200},
                              "minItems": 1, "maxItems": 8}},
    "required": ["claims"],
}
DECOMPOSE_PROMPT = (
    "Split the statement below into atomic claims: short, self-contained factual statements that "
    "together say exactly what the statement says (resolve pronouns; add nothing). "
    'Reply with JSON only: {"claims": ["...", "..."]}.\n\nStatement: '
)


def parse_decomposition(text: str, original: str, max_claims: int = 8) -> tuple[list[str], str | None]:
    """The atomic claims in a model reply, or ([original], error) when the reply is unusable."""
    try:
        obj, _ = parse_object(text)
    except ModelOutputError as e:
        return [original], f"decomposition output is not JSON ({e})"
    items = obj.get("claims")
    if not isinstance(items, list) or not items:
        return [original], "decomposition output has no 'claims' list"
    out = [s.strip() for s in items if isinstance(s, str) and s.strip()]
    if len(out) != len(items):
        return [original], "decomposition 'claims' must be non-empty strings"
    if len(out) > max_claims or any(len(s) > 2 * len(original) + 40 for s in out):
        return [original], "decomposition output is implausibly long"
    return out, None


def decompose(parsed: ParsedAnswer, model: Any, *, max_tokens: int | None = None) -> ParsedAnswer:
    """Split every claim into atomic claims with ``model`` (one batched call); returns a new ParsedAnswer.

    ``max_tokens``: per reply; default the longest reply DECOMPOSE_SCHEMA admits."""
    from trident_local.models.budget import reply_token_bound
    from trident_local.models.protocols import ChatRequest, Message, SamplingParams

    if not parsed.claims:
        return parsed
    reqs = [
        ChatRequest(
            messages=[Message("user", DECOMPOSE_PROMPT + c.text)],
            params=SamplingParams(max_tokens=max_tokens or reply_token_bound(DECOMPOSE_SCHEMA)),
            json_schema=DECOMPOSE_SCHEMA,
            tag="verify.decompose",
        )
        for c in parsed.claims
    ]
    results = model.chat(reqs)
    new = ParsedAnswer(format=parsed.format, claims=[], original=parsed.original, warnings=list(parsed.warnings))
    remap: dict[int, list[int]] = {}
    for i, (c, res) in enumerate(zip(parsed.claims, results, strict=True)):
        if res.error:
            parts, err = [c.text], f"decomposition call failed: {res.error}"
        else:
            parts, err = parse_decomposition(res.text, c.text)
        if err:
            new.warnings.append(f"{c.claim_id}: {err}; kept as one claim")
        remap[i] = []
        for j, t in enumerate(parts):
            cid = c.claim_id if len(parts) == 1 else f"{c.claim_id}.{j + 1}"
            remap[i].append(len(new.claims))
            new.claims.append(Claim(text=t, pages=list(c.pages), claim_id=cid, sentence=c.sentence,
                                    source=c.source if len(parts) == 1 else "decomposed"))
    for s in parsed.sentences:
        new.sentences.append(Sentence(text=s.text, gap=s.gap, claims=[k for i in s.claims for k in remap[i]]))
    return new
