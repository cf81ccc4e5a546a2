"""Paper metadata from an ingested document: canonical id, title, authors, year, abstract.

Also the compare forms of locator fields that the retrievers and the trace scorer
share: :func:`normalize_paper_id`, :func:`normalize_type`, :func:`normalize_label`.

The canonical paper id is, in order of preference:

1. an arXiv id from the file name (``2303.05039v2.pdf``) or from the first page's
   arXiv stamp (``arXiv:2310.06117v1 [cs.CL] ...``), version kept when printed;
2. a DOI printed on the first page (``https://doi.org/10.1162/tacl_a_00660``);
3. the file stem (ACL Anthology names such as ``2023.acl-long.386`` are kept as they are).

Everything here is a heuristic over the text blocks ingestion stored (fonts,
boxes); it reads no PDF and calls no model, so it is cheap to recompute.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trident_local.docs.model import Document, Page, TextBlock

META_VERSION = 1  # bump when extraction changes: cached paper.json files are then recomputed

# new-style arXiv ids (YYMM.NNNN[N]) and old-style (archive/YYMMNNN)
_ARXIV_NEW = r"(?P<new>(?:0[7-9]|1\d|2\d)(?:0[1-9]|1[0-2])\.\d{4,5})(?P<ver>v\d+)?"
_ARXIV_OLD = r"(?P<old>[a-z-]+(?:\.[A-Z]{2})?/\d{7})(?P<over>v\d+)?"
_ARXIV_NAME = re.compile(rf"^(?:arxiv[_:. -]?)?{_ARXIV_NEW}(?![\d])", re.I)
_ARXIV_STAMP = re.compile(rf"arXiv:\s*(?:{_ARXIV_NEW}|{_ARXIV_OLD})(?![\d])(?P<cat>\s*\[[\w.-]+\])?")
_ACL_NAME = re.compile(r"^(?:\d{4}\.[a-z-]+\.\d+|[A-Z]\d{2}-\d{4}|tacl_a_\d+)$", re.I)
_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"<>]+")
_DOI_CONTEXT = re.compile(r"(doi\.org/|doi:\s*|doi/|DOI\s*)$", re.I)
_YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20[0-4]\d)(?!\d)")
_STOP_HEADING = re.compile(
    r"^\s*(?:(?:\d+|[IVX]+)\.?\s*)?(introduction|keywords|key words|ccs concepts|index terms|categories and subject|contents)\b",
    re.I,
)
_ABSTRACT_HEAD = re.compile(r"^\s*a\s?b\s?s\s?t\s?r\s?a\s?c\s?t\b\s*[-—–:.]?\s*", re.I)
_VENUE_LINE = re.compile(
    r"^\s*(proceedings of|published as|findings of|transactions of|under review|preprint|accepted|"
    r"in proceedings|workshop|copyright|©|arxiv:)",
    re.I,
)
_AFFILIATION = re.compile(
    r"(?<![A-Za-z])(universit\w*|institut\w*|lab\b|laborator\w*|research|school|college|department|dept\.?|faculty|"
    r"centre|center|inc\.?|corp\w*|ltd|gmbh|academy|google|microsoft|deepmind|openai|meta\b|facebook|amazon|"
    r"ibm|nvidia|mbzuai|program(?:me)?|hospital|ministry|foundation|company|technolog\w*|sciences?|"
    r"received|accepted|available|published|correspond\w*|equal contribution)(?![A-Za-z])",
    re.I,
)
_NAME = re.compile(r"^[A-Z][\w'’`.-]*(?:\s+(?:[A-Z][\w'’`.-]*|de|van|von|der|da|del|di|la|le)){1,4}$")
_SUPERSCRIPTS = re.compile(r"[\d∗*†‡§¶#♠♣♥♦⋆✝\u2020-\u2021]+(?:\s*,\s*[\d∗*†‡§¶a-z]+)*")


@dataclass
class PaperMeta:
    """One paper's record. ``paper_id`` is the canonical id; ``id_kind`` says where it came from."""

    paper_id: str
    id_kind: str  # arxiv | doi | acl | stem
    doc_id: str = ""
    file_name: str = ""
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    abstract: str = ""
    arxiv_id: str = ""
    doi: str = ""
    version: int = META_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PaperMeta:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})

    @property
    def head_text(self) -> str:
        """What paper-level retrieval reads first: title, authors, abstract."""
        return "\n".join(x for x in (self.title, ", ".join(self.authors), self.abstract) if x)


# -- ids -----------------------------------------------------------------------------------------------------
def normalize_paper_id(pid: str) -> str:
    """Compare form of a paper id: lower case, no ``arXiv:`` / ``doi:`` / doi.org prefix, no spaces or ``.pdf``."""
    s = str(pid or "").strip()
    s = re.sub(r"^(https?://)?(dx\.)?doi\.org/", "", s, flags=re.I)
    s = re.sub(r"^(arxiv|doi)\s*:\s*", "", s, flags=re.I)
    s = re.sub(r"\.pdf$", "", s, flags=re.I)
    return re.sub(r"\s+", "", s).lower()


# compare forms of evidence types and printed object labels (the scorer and the retrievers share them)
TYPE_ALIASES = {
    "table": "table", "tab": "table",
    "figure": "figure", "fig": "figure", "chart": "figure", "plot": "figure", "image": "figure", "diagram": "figure",
    "equation": "equation", "eq": "equation", "formula": "equation", "algorithm": "equation",
    "equation/algorithm": "equation",
    "citation_context": "citation_context", "citation": "citation_context", "citation context": "citation_context",
    "text_span": "text_span", "text span": "text_span", "text": "text_span", "span": "text_span",
    "paragraph": "text_span", "sentence": "text_span",
}
OBJECT_ID_RE = re.compile(r"^p\d+:[a-z_]+:\d+$")  # an index object id: p12:table:2


def normalize_type(t: str) -> str:
    """Compare form of an evidence type: "Text span" -> text_span, "algorithm" -> equation, "Fig" -> figure."""
    s = " ".join(str(t or "").lower().replace("-", " ").split())
    return TYPE_ALIASES.get(s, TYPE_ALIASES.get(s.replace(" ", "_"), s.replace(" ", "_")))


def normalize_label(label: Any, type_: str = "") -> str:
    """Compare form of an object label: no case, no spaces; Fig./Tab./Eq. spelled out; equations by number."""
    if label is None:
        return ""
    s = unicodedata.normalize("NFKC", str(label)).strip().lower().rstrip(":.")
    if not s:
        return ""
    if OBJECT_ID_RE.match(s.replace(" ", "")):
        return s.replace(" ", "")
    m = re.match(r"^(?:eq\.?|eqn\.?|equation)?\s*\(\s*(\d+[a-z]?)\s*\)$|^(?:eq\.?|eqn\.?|equation)\s*(\d+[a-z]?)$", s)
    if m or (normalize_type(type_) == "equation" and re.fullmatch(r"\d+[a-z]?", s)):
        return "eq" + (m.group(1) or m.group(2) if m else s)
    s = re.sub(r"^fig(?:ure)?\.?\s*", "figure", s)
    s = re.sub(r"^tab(?:le)?\.?\s*", "table", s)
    s = re.sub(r"^alg(?:orithm)?\.?\s*", "algorithm", s)
    return re.sub(r"\s+", "", s)


def arxiv_id_from_name(name: str) -> str:
    """``2303.05039v2`` from ``2303.05039v2.pdf`` (or ``arXiv_2303.05039.pdf``); "" when the name is not one."""
    m = _ARXIV_NAME.match(Path(name).stem if name.lower().endswith(".pdf") else name)
    return (m.group("new") + (m.group("ver") or "")) if m else ""


def _is_vertical(b: TextBlock) -> bool:
    w, h = b.bbox[2] - b.bbox[0], b.bbox[3] - b.bbox[1]
    return h > 3 * max(w, 1.0)


def arxiv_id_from_page(page: Page) -> str:
    """The arXiv stamp's id on a first page: ``arXiv:ID [cat]`` anywhere, or ``arXiv:ID`` in a rotated margin block.

    A bare ``arXiv:ID`` in running text is a citation of another paper and is ignored.
    """
    for b in page.blocks:
        for m in _ARXIV_STAMP.finditer(b.text):
            if m.group("cat") or _is_vertical(b):
                base = m.group("new") or m.group("old")
                return base + (m.group("ver") or m.group("over") or "")
    return ""


def _clean_doi(s: str) -> str:
    s = s.rstrip(".,;:)]}'\"")
    s = re.sub(r"\.pdf$", "", s, flags=re.I)
    # publisher download stamps append /<number>/<file>: 10.1162/tacl_a_00660/2369509/tacl_a_00660.pdf
    s = re.sub(r"/\d{4,}(/.*)?$", "", s)
    return s.rstrip(".,;:")


def doi_from_text(text: str) -> str:
    """The paper's own DOI in first-page text; "" when none.

    Candidates preceded by ``doi.org/``, ``doi:`` or ``doi/`` come first; a candidate
    that is a prefix of a longer one is dropped (a line break or a rendered
    underscore cut it short); then the most frequent, then the first.
    """
    found: list[tuple[str, bool]] = []
    for m in _DOI.finditer(text):
        doi = _clean_doi(m.group(0))
        if len(doi.split("/", 1)[1] if "/" in doi else "") < 2:
            continue
        found.append((doi, bool(_DOI_CONTEXT.search(text[max(0, m.start() - 12) : m.start()]))))
    if not found:
        return ""
    pool = [d for d, ctx in found if ctx] or [d for d, _ in found]
    full = [d for d in pool if not any(o != d and o.lower().startswith(d.lower()) for o in pool)]
    counts = Counter(d.lower() for d in full)
    best = max(full, key=lambda d: (counts[d.lower()], -full.index(d)))
    return best


# -- title, authors, abstract -----------------------------------------------------------------------------------
def _join_lines(text: str) -> str:
    """Lines of a block to one string; a line-break hyphen before a lower-case letter is removed."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    out = ""
    for ln in lines:
        if out.endswith("-") and ln[:1].islower():
            out = out[:-1] + ln
        elif out.endswith("-"):
            out += ln
        else:
            out = f"{out} {ln}" if out else ln
    return " ".join(out.split())


def _plausible_meta_title(t: str) -> bool:
    t = t.strip()
    if len(t) < 15 or len(t.split()) < 3:
        return False
    return not re.match(r"^(microsoft word|untitled|transactions|proceedings|document|paper)\b", t, re.I)


def title_blocks(page: Page) -> list[TextBlock]:
    """The largest-font run of blocks in the top part of a first page (the title), in order."""
    top = page.height * 0.45 if page.height else 400.0
    cands = [
        b for b in page.blocks
        if b.bbox[1] < top and not _is_vertical(b) and len(b.text.strip()) >= 4
        and sum(c.isalpha() for c in b.text) >= 4 and not _VENUE_LINE.match(b.text)
        and not _ABSTRACT_HEAD.match(b.text)
    ]
    if not cands:
        return []
    size = max(b.font_size for b in cands)
    run: list[TextBlock] = []
    for b in cands:
        if abs(b.font_size - size) <= 0.6:
            if run and b.bbox[1] - run[-1].bbox[3] > 2.5 * size:
                break
            run.append(b)
        elif run:
            break
    return run


def extract_title(doc: Document) -> tuple[str, list[TextBlock]]:
    """(title, the first page's title blocks); the PDF's own title metadata wins when it looks like a title."""
    first = doc.pages[0] if doc.pages else None
    blocks = title_blocks(first) if first else []
    meta = (doc.metadata or {}).get("title", "")
    if _plausible_meta_title(meta):
        return " ".join(meta.split()), blocks
    if blocks:
        return _join_lines("\n".join(b.text for b in blocks))[:300], blocks
    return (doc.title or Path(doc.file_name).stem)[:300], blocks


def _strip_superscripts(name: str) -> str:
    name = re.sub(r"(?<=[a-zé-ÿ.])\d+(?:\s*,\s*\d+)*$", "", name.strip())
    name = re.sub(r"\s+[a-d](?:\s*,\s*[a-d])*$", "", name)  # "Haofen Wang a,c"
    name = _SUPERSCRIPTS.sub(" ", name)
    return " ".join(name.replace("∗", " ").split()).strip(" ,;")


def _strip_letter_marks(names: list[str]) -> list[str]:
    """Affiliation letters glued to names ("Yunfan Gaoa, Yun Xiongb"): removed only when every name of the
    block ends in one of a-d, since a single name may well end so ("Khanna")."""
    if len(names) >= 3 and all(re.search(r"[a-z][a-d]$", n) for n in names):
        return [n[:-1] for n in names]
    return names


def extract_authors(page: Page, title: list[TextBlock]) -> list[str]:
    """Author names between the title and the abstract heading on the first page (best effort)."""
    if not title:
        return []
    y_top = max(b.bbox[3] for b in title) - 1
    stop = [b.bbox[1] for b in page.blocks if b.bbox[1] > y_top and (_ABSTRACT_HEAD.match(b.text) or
                                                                        _STOP_HEADING.match(b.text))]
    y_bottom = min(stop) if stop else y_top + 200
    names: list[str] = []
    for b in page.blocks:
        if not (y_top <= b.bbox[1] < y_bottom) or b in title or _is_vertical(b):
            continue
        block_names: list[str] = []
        for line in b.text.split("\n"):
            if "@" in line or _AFFILIATION.search(line) or not re.search(r"[A-Za-z]", line):
                continue
            # names run together on one line ("Liangming Pan1,2 Xiaobao Wu3"): split after superscripts
            line = re.sub(r"(?<=[a-z])(\d+(?:,\d+)*|[∗*†‡]+)\s+(?=[A-Z])", r"\1, ", line)
            for part in re.split(r",|;|\band\b|&|\s{3,}", line):
                nm = _strip_superscripts(re.sub(r"^\s*by\s+", "", part, flags=re.I))
                if (_NAME.match(nm) and not _AFFILIATION.search(nm) and len(nm) <= 60
                        and not re.match(r"^[A-Z]{2,}\s", nm)):  # "ETH Zürich", "IIT Kharagpur"
                    block_names.append(nm)
        names += [n for n in _strip_letter_marks(block_names) if n not in names]
    return names[:40]


def extract_abstract(page: Page, max_chars: int = 3000) -> str:
    """The abstract: text after an "Abstract" heading (same column), or an inline ``Abstract—...`` block."""
    blocks = page.blocks
    for b in blocks:
        m = _ABSTRACT_HEAD.match(b.text)
        if not m:
            continue
        parts = []
        inline = b.text[m.end():].strip()
        if inline:
            parts.append(_join_lines(inline))
            column = b.bbox
        else:
            below = [c for c in blocks if c.bbox[1] >= b.bbox[3] - 2 and c is not b
                     and c.bbox[0] <= (b.bbox[0] + b.bbox[2]) / 2 <= c.bbox[2]]
            if not below:
                return ""
            column = min(below, key=lambda c: c.bbox[1]).bbox
        width = max(column[2] - column[0], 1.0)
        rest = sorted(
            (c for c in blocks if c is not b and c.bbox[1] >= b.bbox[1]
             and min(c.bbox[2], column[2]) - max(c.bbox[0], column[0]) > 0.5 * min(width, c.bbox[2] - c.bbox[0])),
            key=lambda c: c.bbox[1],
        )
        for c in rest:
            if _STOP_HEADING.match(c.text) or re.search(r"(\.\s){4,}", c.text) or len(" ".join(parts)) > max_chars:
                break
            if _is_vertical(c):
                continue
            parts.append(_join_lines(c.text))
        return " ".join(parts)[:max_chars].strip()
    return ""


def extract_year(doc: Document, arxiv_id: str) -> int | None:
    """From a new-style arXiv id (YYMM), else the commonest year in the first page's header and footer
    lines (latest on ties), else the PDF's creation date."""
    m = re.match(r"^(\d{2})(\d{2})\.\d{4,5}", arxiv_id)
    if m:
        return 2000 + int(m.group(1))
    if doc.pages:
        p = doc.pages[0]
        h = p.height or 800.0
        years = [int(y) for b in p.blocks if b.bbox[3] < 0.12 * h or b.bbox[1] > 0.88 * h for y in _YEAR.findall(b.text)]
        if years:
            c = Counter(years)
            return max(c, key=lambda y: (c[y], y))
    m = re.match(r"^D:(\d{4})", (doc.metadata or {}).get("creationDate", ""))
    return int(m.group(1)) if m else None


def paper_meta(doc: Document) -> PaperMeta:
    """The paper record of an ingested document."""
    first = doc.pages[0] if doc.pages else Page(number=1, text="", width=0, height=0)
    arxiv = arxiv_id_from_name(doc.file_name)
    stamp = arxiv_id_from_page(first)
    if arxiv and stamp.startswith(arxiv) and "v" not in arxiv:
        arxiv = stamp  # the file name lacks the version the stamp prints
    arxiv = arxiv or stamp
    doi = doi_from_text(first.text)
    stem = Path(doc.file_name).stem
    if arxiv:
        pid, kind = arxiv, "arxiv"
    elif doi:
        pid, kind = doi, "doi"
    else:
        pid, kind = stem, ("acl" if _ACL_NAME.match(stem) else "stem")
    title, tblocks = extract_title(doc)
    return PaperMeta(
        paper_id=pid,
        id_kind=kind,
        doc_id=doc.doc_id,
        file_name=doc.file_name,
        title=title,
        authors=extract_authors(first, tblocks),
        year=extract_year(doc, arxiv),
        abstract=extract_abstract(first),
        arxiv_id=arxiv,
        doi=doi,
    )
