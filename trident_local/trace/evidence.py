"""Evidence retrieval inside selected papers, over typed objects.

Candidates are the objects ingestion found (table, figure, equation,
citation_context; a table known only by its caption gets its cells read from the
blocks next to the caption, see :func:`block_table`) plus ``text_span`` objects made here from the page's text
blocks (a paragraph, or a run of sentences of at most ``SPAN_WORDS`` words; blocks
inside tables, figures and equations, captions and running headers are left
out). Ids follow the ingestion scheme: ``p{page}:text_span:{n}`` in reading order.

An object is read as "section label caption text" (an equation also with the text
just above it, which usually says what it is). Three rankings are fused by reciprocal
rank or score: BM25 over the candidates of the selected papers, dense similarity (object
embeddings cached per document as ``trace_objects-<embedder>.npy``), and the rank
of the object's page in the index's page retrieval (by default their min-max
normalized scores are averaged, ``fusion = "combsum"``). Then two priors from the
question and its answer format: an object whose printed label the question names
("Table 3") goes first; objects of a type the question asks for ("which figure",
"the loss equation", "cited") are boosted, and tables for a table answer or a
question after a number (:func:`type_weights`).

    objs = ObjectRetriever(index)
    ranked = objs.search(question, doc_ids)
    evidence = objs.select(question, ranked, doc_ids)
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from trident_local.atomic import atomic_write_json, atomic_write_npy, read_json
from trident_local.docs.model import BBox, Document, EvidenceObject, Page, TextBlock
from trident_local.docs.objects import CAPTION
from trident_local.docs.paper_meta import normalize_label
from trident_local.fusion import combsum, rrf_ranks
from trident_local.query import Query
from trident_local.retrieve.base import Hit
from trident_local.text import RESULT_CUES, sentences, stemmer, windows

if TYPE_CHECKING:
    from trident_local.index import Index

log = logging.getLogger(__name__)

OBJECTS_VERSION = 1  # bump when candidate making changes: cached embeddings are then recomputed
SPAN_WORDS = 60  # longest text span, in words
MIN_SPAN_CHARS = 40
LABEL_BONUS = 1.0  # added to the fused score of an object the question names: beats any RRF sum
TYPE_BOOST = 0.5  # fused score x (1 + TYPE_BOOST) for a type the question asks for
PAGE_DEPTH = 40
_LABEL_MENTION = re.compile(
    r"\b(Table|Tab\.|Figure|Fig\.|Equation|Eq\.|Eqn\.|Algorithm|Alg\.)\s*\(?\s*(\d+[a-z]?|[IVX]+)\b\)?", re.I)
TYPE_CUES: dict[str, re.Pattern[str]] = {
    "table": re.compile(r"\btables?\b|\btab\.", re.I),
    "figure": re.compile(r"\b(figures?|fig\.|plots?|charts?|diagrams?|histograms?|curves?|heat ?maps?|"
                         r"screenshots?|illustrat\w*|visuali[sz]\w*|depict\w*|pictured)\b", re.I),
    "equation": re.compile(r"\b(equations?|eq\.|eqn\.|formulas?|formulae|loss function|objective function|"
                           r"defined as|defines?|expressions?|algorithms?|pseudo-?code|formally)\b|"
                           r"[_^{}=]|\b\w\(\w+(?:,\s*\w+)*\)", re.I),
    "citation_context": re.compile(r"\b(cite[sd]?|citing|citations?|references?|credited|attribut\w* to|"
                                   r"which (?:prior |earlier )?(?:work|study|studies|paper|papers|authors?))\b", re.I),
}


@dataclass
class Evidence:
    """A located piece of evidence: paper (canonical id) + page + type + object."""

    paper: str
    doc_id: str
    page: int
    type: str
    object_id: str
    label: str = ""
    caption: str = ""
    text: str = ""
    score: float = 0.0
    source: str = "retrieved"  # retrieved | oracle

    def locator(self) -> dict[str, Any]:
        """The record a trace answer reports: ``object`` is the printed label (None when the object has none)."""
        return {"paper": self.paper, "page": self.page, "type": self.type, "object": self.label or None,
                "object_id": self.object_id}

    def content(self, max_chars: int = 1500) -> str:
        parts = [x for x in (self.label, self.caption, self.text) if x]
        if self.caption and self.label and self.caption.lower().startswith(self.label.lower()):
            parts = [self.caption, self.text] if self.text else [self.caption]
        return " | ".join(parts)[:max_chars]


# -- candidates -------------------------------------------------------------------------------------------------
def _inside(inner: BBox, outer: BBox) -> float:
    """Share of ``inner``'s area that lies inside ``outer``."""
    x0, y0, x1, y1 = max(inner[0], outer[0]), max(inner[1], outer[1]), min(inner[2], outer[2]), min(inner[3], outer[3])
    if x1 <= x0 or y1 <= y0:
        return 0.0
    area = max((inner[2] - inner[0]) * (inner[3] - inner[1]), 1e-6)
    return (x1 - x0) * (y1 - y0) / area


def text_spans(page: Page, max_words: int = SPAN_WORDS) -> list[EvidenceObject]:
    """Text-span objects of a page from its blocks, numbered in reading order."""
    boxes = [o.bbox for o in page.objects if o.type in ("table", "figure", "equation")]
    h = page.height or 800.0
    out: list[EvidenceObject] = []
    for b in page.blocks:
        text = " ".join(b.text.split())
        if len(text) < MIN_SPAN_CHARS or len(text.split()) < 6 or CAPTION.match(b.text):
            continue
        if (b.bbox[3] < 0.06 * h or b.bbox[1] > 0.94 * h) and len(text.split()) < 20:
            continue  # running header or footer
        bw, bh = b.bbox[2] - b.bbox[0], b.bbox[3] - b.bbox[1]
        if bh > 3 * max(bw, 1.0):
            continue  # rotated margin text (arXiv stamp)
        if any(_inside(b.bbox, box) > 0.5 for box in boxes):
            continue
        for piece in windows(sentences(text), max_words):
            out.append(EvidenceObject("", "text_span", page.number, b.bbox, text=piece))
    for i, o in enumerate(out, start=1):
        o.object_id = EvidenceObject.make_id(page.number, "text_span", i)
    return out


def _context_above(page: Page, bbox: BBox, words: int = 40) -> str:
    """The last words of the text block just above ``bbox`` in the same column (what an equation is)."""
    above = [b for b in page.blocks if b.bbox[3] <= bbox[1] + 2 and min(b.bbox[2], bbox[2]) > max(b.bbox[0], bbox[0])]
    if not above:
        return ""
    b = max(above, key=lambda x: x.bbox[3])
    return " ".join(b.text.split()[-words:])


def _tabular(b: TextBlock) -> bool:
    """A block that reads like table cells: several short lines (PyMuPDF puts one cell per line)."""
    lines = [ln for ln in b.text.split("\n") if ln.strip()]
    return len(lines) >= 2 and sum(len(ln) for ln in lines) / len(lines) <= 32 and not CAPTION.match(b.text)


def block_table(page: Page, caption: BBox, max_gap: float = 30.0) -> str:
    """The text of a table drawn without rules, rebuilt from the blocks next to its caption: the first block
    below the caption (else above) that reads like cells is the header, one cell per line; the following
    blocks are body cells, read row by row when their count is a multiple of the header's. Rows are returned
    as "a | b | c" lines, like ingested tables; "" when nothing tabular is next to the caption."""
    def run(direction: int) -> list[TextBlock]:
        near = sorted((b for b in page.blocks if min(b.bbox[2], caption[2]) - max(b.bbox[0], caption[0]) > 0
                       and (b.bbox[1] >= caption[3] - 1 if direction > 0 else b.bbox[3] <= caption[1] + 1)),
                      key=lambda b: b.bbox[1] * direction)
        out: list[TextBlock] = []
        edge = caption[3] if direction > 0 else caption[1]
        for b in near:
            gap = b.bbox[1] - edge if direction > 0 else edge - b.bbox[3]
            if gap > max_gap or not _tabular(b):
                break
            out.append(b)
            edge = b.bbox[3] if direction > 0 else b.bbox[1]
        return out if direction > 0 else out[::-1]

    blocks = run(+1) or run(-1)
    if not blocks:
        return ""
    header = [ln.strip() for ln in blocks[0].text.split("\n") if ln.strip()]
    body = [ln.strip() for b in blocks[1:] for ln in b.text.split("\n") if ln.strip()]
    n = len(header)
    if n >= 2 and body and len(body) % n == 0:
        rows = [header] + [body[i:i + n] for i in range(0, len(body), n)]
        return "\n".join(" | ".join(r) for r in rows)
    return "\n".join([" | ".join(header)] + body)


@dataclass
class Candidate:
    obj: EvidenceObject
    search_text: str


def doc_candidates(doc: Document) -> list[Candidate]:
    """Every evidence candidate of a document, in page order: ingestion objects then text spans per page.
    Figures with neither label nor caption carry nothing to match and are left out."""
    out: list[Candidate] = []
    for page in doc.pages:
        section = page.section_path[-1] if page.section_path else ""
        if len(section) > 80 or re.match(r"\s*arxiv:", section, re.I):
            section = ""  # not a heading (a margin stamp read as one)
        for o in page.objects:
            if o.type == "figure" and not (o.label or o.caption):
                continue
            if o.type == "table" and not o.text.strip(" |\n") and o.caption:
                # a table found by its caption only (no rules): read its cells from the blocks around it
                o = dataclasses.replace(o, text=block_table(page, o.bbox))
            extra = _context_above(page, o.bbox) if o.type == "equation" else ""
            out.append(Candidate(o, " ".join(x for x in (section, o.label, o.caption, o.text, extra) if x)))
        for o in text_spans(page):
            out.append(Candidate(o, f"{section} {o.text}" if section else o.text))
    return out


# -- retrieval ----------------------------------------------------------------------------------------------------
def label_mentions(question: str) -> set[str]:
    """Normalized labels the question names: {"table3", "figure2", "eq4", "algorithm1"}."""
    return {normalize_label(f"{m.group(1)} {m.group(2)}") for m in _LABEL_MENTION.finditer(question)}


def type_weights(question: str, answer_format: str = "free_form") -> dict[str, float]:
    """Multipliers of the fused score per object type: types the question names ("which figure", "the loss
    equation", "cited") get 1 + TYPE_BOOST; when it names none, a table answer makes tables count double and a
    question after a score or result makes tables count a little more (results live in tables)."""
    w = {t: 1.0 for t in ("table", "figure", "equation", "citation_context", "text_span")}
    named = [t for t, rx in TYPE_CUES.items() if rx.search(question)]
    for t in named:
        w[t] *= 1 + TYPE_BOOST
    if named:  # the question says where to look: the answer format does not overrule it
        return w
    if answer_format == "table":
        w["table"] *= 2.0
    elif RESULT_CUES.search(question):
        w["table"] *= 1 + TYPE_BOOST / 2
    return w


class ObjectRetriever:
    """Typed evidence retrieval inside chosen documents of an index."""

    # combsum: min-max normalized BM25 and dense scores and a linear page-rank prior, averaged (keeps how far
    # ahead the best match is); rrf: reciprocal rank fusion of the three rankings. combsum matched or beat rrf
    # on every record of the dev set's oracle-papers evidence (F1 0.644 vs 0.568), so it is the default.
    fusion = "combsum"

    def __init__(self, index: Index, embedder: Any = None, paper_ids: dict[str, str] | None = None):
        self.index = index
        self.store = index.store
        self._embedder = embedder
        self._paper_ids = paper_ids or {}
        self._cands: dict[str, list[Candidate]] = {}
        self._vecs: dict[str, np.ndarray] = {}

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            self._embedder = self.index.models.embedder
        return self._embedder

    def paper_id(self, doc_id: str) -> str:
        if doc_id not in self._paper_ids:
            from trident_local.trace.papers import paper_record

            self._paper_ids[doc_id] = paper_record(self.store, doc_id).paper_id
        return self._paper_ids[doc_id]

    def candidates(self, doc_id: str) -> list[Candidate]:
        if doc_id not in self._cands:
            self._cands[doc_id] = doc_candidates(self.store.document(doc_id))
        return self._cands[doc_id]

    def vectors(self, doc_id: str) -> np.ndarray | None:
        """Embeddings of the document's candidates, cached in the index next to the document."""
        emb = self.embedder
        if emb is None:
            return None
        if doc_id in self._vecs:
            return self._vecs[doc_id]
        cands = self.candidates(doc_id)
        key = hashlib.sha1("\x00".join(c.search_text for c in cands).encode()).hexdigest()
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.store.config.embedder)
        d = self.store.doc_dir(doc_id)
        npy, meta = d / f"trace_objects-{name}.npy", d / f"trace_objects-{name}.json"
        vecs = None
        if npy.exists() and meta.exists():
            try:
                m = read_json(meta)
                if m.get("version") == OBJECTS_VERSION and m.get("key") == key:
                    vecs = np.load(npy).astype(np.float32)
            except (OSError, ValueError):
                vecs = None
        if vecs is None or len(vecs) != len(cands):
            vecs = (emb.encode([c.search_text for c in cands], kind="passage") if cands
                    else np.zeros((0, emb.dim), np.float32)).astype(np.float32)
            try:
                atomic_write_npy(npy, vecs.astype(np.float16))
                atomic_write_json(meta, {"version": OBJECTS_VERSION, "key": key, "n": len(cands)})
            except OSError as e:
                log.debug("could not cache object vectors for %s: %s", doc_id, e)
        self._vecs[doc_id] = vecs
        return vecs

    def _page_ranking(self, question: str | Query, doc_ids: Sequence[str]) -> list[Hit]:
        pools = self.store.config.pools
        pool = "rrf" if "bm25" in pools and "dense" in pools else ("bm25" if "bm25" in pools else None)
        if pool is None:
            return []
        return self.index.search(question, pool=pool, doc=list(doc_ids), k=PAGE_DEPTH)

    def search(self, question: str | Query, doc_ids: Sequence[str], k: int = 30, *,
               answer_format: str = "free_form") -> list[Evidence]:
        """Candidates of ``doc_ids`` ranked for ``question``, best first (a :class:`Query` is embedded
        once for the objects and the page pool)."""
        import bm25s

        query = Query.of(question)
        question = query.text
        doc_ids = list(doc_ids)
        rows: list[tuple[str, Candidate]] = [(d, c) for d in doc_ids for c in self.candidates(d)]
        if not rows:
            return []
        rankings: list[dict[int, int]] = []  # row -> 1-based rank
        scores: list[np.ndarray] = []  # raw scores of the text rankings (for fusion="combsum")
        q = bm25s.tokenize([question], stopwords="en", stemmer=stemmer(), return_ids=False, show_progress=False)
        terms = q[0] if q and q[0] else []
        if terms:
            tokens = bm25s.tokenize([c.search_text or " " for _, c in rows], stopwords="en", stemmer=stemmer(),
                                    show_progress=False)
            bm = bm25s.BM25()
            bm.index(tokens, show_progress=False)
            s = np.asarray(bm.get_scores(terms), dtype=np.float32)
            order = [int(i) for i in np.argsort(-s, kind="stable") if s[i] > 0]
            rankings.append({i: r for r, i in enumerate(order, start=1)})
            scores.append(s)
        if self.embedder is not None:
            mats = [self.vectors(d) for d in doc_ids]
            if all(m is not None for m in mats):
                mat = np.concatenate(mats)
                qv = query.vector(self.embedder).astype(np.float32)
                s = mat @ qv
                rankings.append({int(i): r for r, i in enumerate(np.argsort(-s, kind="stable"), start=1)})
                scores.append(s)
        page_rank = {(h.doc_id, h.page): r for r, h in enumerate(self._page_ranking(query, doc_ids), start=1)}
        if page_rank:  # objects on one page share the page's rank
            rankings.append({i: page_rank[(d, c.obj.page)] for i, (d, c) in enumerate(rows)
                             if (d, c.obj.page) in page_rank})
        fused = rrf_ranks(rankings)
        if self.fusion == "combsum" and scores:
            comb = combsum(scores)
            if page_rank:
                worst = max(page_rank.values()) + 1
                pr = np.array([1.0 - (page_rank.get((d, c.obj.page), worst) - 1) / worst for d, c in rows])
                comb = (comb * len(scores) + pr) / (len(scores) + 1)
            fused = {i: float(v) for i, v in enumerate(comb)}
        named, weights = label_mentions(question), type_weights(question, answer_format)
        out = []
        for i, (d, c) in enumerate(rows):
            score = fused.get(i, 0.0) * weights.get(c.obj.type, 1.0)
            if c.obj.label and normalize_label(c.obj.label, c.obj.type) in named:
                score += LABEL_BONUS
            o = c.obj
            out.append(Evidence(self.paper_id(d), d, o.page, o.type, o.object_id, o.label, o.caption, o.text, score))
        out.sort(key=lambda e: (-e.score, doc_ids.index(e.doc_id), e.page, e.object_id))
        return out[:k]

    def select(self, question: str, ranked: Sequence[Evidence], doc_ids: Sequence[str], *,
               per_paper: int = 1, max_items: int = 5) -> list[Evidence]:
        """The evidence to report: the objects the question names by label, else the best ``per_paper``
        candidates of each chosen paper; at most ``max_items``, best first."""
        named = label_mentions(question)
        chosen = [e for e in ranked if e.label and normalize_label(e.label, e.type) in named]
        named_docs = {e.doc_id for e in chosen}
        for d in doc_ids:
            if d in named_docs:
                continue
            chosen += [e for e in ranked if e.doc_id == d][:per_paper]
        chosen.sort(key=lambda e: -e.score)
        return chosen[:max_items]
