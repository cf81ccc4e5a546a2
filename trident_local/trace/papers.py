"""Paper collections: paper records per document and paper-level retrieval.

A record (:class:`~trident_local.docs.paper_meta.PaperMeta`) is computed from the
stored Document on first use and cached as ``docs/<doc_id>/paper.json`` (atomic
write; recomputed when the extractor's version changes). Paper-level retrieval
fuses, by reciprocal rank, four rankings of the papers:

- BM25 over each paper's head (title, authors, abstract);
- dense similarity of the question to the head (cached ``paper_head-<embedder>.npy``);
- the best BM25 page of each paper (the index's ``bm25`` pool);
- the best dense page of each paper (the index's ``dense`` pool, when the index has it).

:meth:`PaperIndex.select` then decides how many papers a question needs: the
papers it names (a distinctive system or dataset name from one paper's title or
abstract, e.g. "SciTab", "ProgramFC"), else the best one, or two when the
question speaks of several papers.

    papers = PaperIndex(Index.open("idx"))
    hits = papers.search("Which benchmark verifies claims on scientific tables?")
    chosen = papers.select(question, hits)
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from trident_local.atomic import atomic_write_json, atomic_write_npy, read_json
from trident_local.docs.paper_meta import META_VERSION, PaperMeta, normalize_paper_id, paper_meta
from trident_local.errors import TridentError
from trident_local.query import Query
from trident_local.retrieve.base import Hit
from trident_local.retrieve.rrf import rrf_fuse
from trident_local.text import stemmer

if TYPE_CHECKING:
    from trident_local.index import Index
    from trident_local.store.index_store import IndexStore

log = logging.getLogger(__name__)

PAPER_FILE = "paper.json"
PAGE_DEPTH = 300  # pages read from each page pool when ranking papers
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*")
_PLURAL_CUES = re.compile(
    r"\b(papers|both|two (?:works|studies|methods|systems|benchmarks)|each (?:paper|work|study)|"
    r"respectively|in common|across (?:the )?(?:papers|works)|these (?:works|papers))\b", re.I)
_GENERIC_NAMES = {
    "llm", "llms", "nlp", "gpt", "gpt-3", "gpt-4", "gpt-3.5", "chatgpt", "rag", "ai", "api", "qa", "kg", "kgs",
    "slm", "slms", "ie", "rlhf", "bert", "roberta", "t5", "sota", "cot", "icl", "lm", "lms", "ner", "re", "ed",
    "http", "https", "github", "arxiv", "doi", "abstract", "introduction", "ieee", "acm", "acl", "emnlp", "naacl",
}


def paper_record(store: IndexStore, doc_id: str, *, refresh: bool = False) -> PaperMeta:
    """The paper record of ``doc_id``, from the cache when it is current, else computed and cached."""
    path = store.doc_dir(doc_id) / PAPER_FILE
    if not refresh and path.exists():
        try:
            d = read_json(path)
            if d.get("version") == META_VERSION and d.get("doc_id") == doc_id:
                return PaperMeta.from_dict(d)
        except (ValueError, OSError):
            pass
    meta = paper_meta(store.document(doc_id))
    try:
        atomic_write_json(path, meta.to_dict())
    except OSError as e:  # a read-only index still answers
        log.debug("could not cache %s: %s", path, e)
    return meta


@dataclass
class PaperHit:
    """One ranked paper; ``ranks`` is the paper's 1-based rank in each fused ranking it appears in."""

    paper_id: str
    doc_id: str
    score: float
    title: str = ""
    ranks: dict[str, int] = field(default_factory=dict)
    named: bool = False  # the question names this paper (see PaperIndex.select)


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def coined_names(meta: PaperMeta) -> set[str]:
    """Candidate names of a paper's system or dataset, lower-cased: the title's prefix before a colon (up to
    three words) and the mixed- or upper-case coined tokens ("SCITAB", "KaLMA") of its abstract and, unless
    the title is set in capitals throughout, of its title."""
    names: set[str] = set()
    if ":" in meta.title:
        prefix = meta.title.split(":", 1)[0].strip()
        if 1 <= len(prefix.split()) <= 3:
            names.add(prefix.lower())
    title = "" if meta.title.upper() == meta.title else meta.title
    for tok in _TOKEN.findall(f"{title} {meta.abstract}"):
        upper = sum(c.isupper() for c in tok)
        if len(tok) >= 4 and upper >= 2 and not tok.isdigit() and tok.lower() not in _GENERIC_NAMES:
            names.add(tok.lower())
    return {n for n in names if n not in _GENERIC_NAMES and len(n) >= 4}


class PaperIndex:
    """Paper records and paper-level retrieval over an :class:`~trident_local.index.Index`."""

    def __init__(self, index: Index, embedder: Any = None):
        self.index = index
        self.store = index.store
        self._embedder = embedder
        self._records: list[PaperMeta] | None = None
        self._bm25 = None
        self._head_vecs: np.ndarray | None = None
        self._names: dict[str, set[str]] | None = None

    # -- records ---------------------------------------------------------------------------------------------
    @property
    def embedder(self) -> Any:
        """The index's text embedder; None when the index is configured with ``embedder = "none"``."""
        if self._embedder is None:
            self._embedder = self.index.models.embedder
        return self._embedder

    def records(self) -> list[PaperMeta]:
        if self._records is None:
            self._records = [paper_record(self.store, d) for d in self.store.doc_ids()]
            seen: Counter[str] = Counter(normalize_paper_id(r.paper_id) for r in self._records)
            dup = sorted(k for k, n in seen.items() if n > 1)
            if dup:
                log.warning("several documents share paper ids %s; the first added wins", ", ".join(dup))
        return self._records

    def record(self, doc_id: str) -> PaperMeta:
        for r in self.records():
            if r.doc_id == doc_id:
                return r
        raise TridentError(f"no document {doc_id!r} in {self.store.root}")

    def paper_id(self, doc_id: str) -> str:
        return self.record(doc_id).paper_id

    def resolve(self, name: str) -> str:
        """A doc_id from a canonical paper id (any case, with or without ``arXiv:``), a doc_id or a file name."""
        key = normalize_paper_id(name)
        for r in self.records():
            if normalize_paper_id(r.paper_id) == key:
                return r.doc_id
        for r in self.records():  # a version-less arXiv id picks the stored version
            if r.arxiv_id and re.sub(r"v\d+$", "", r.arxiv_id.lower()) == key:
                return r.doc_id
        try:
            return self.store.resolve(name)
        except TridentError:
            known = ", ".join(r.paper_id for r in self.records()[:12])
            raise TridentError(f"no paper {name!r} in {self.store.root} (papers: {known}"
                               f"{', ...' if len(self.records()) > 12 else ''})") from None

    # -- rankings --------------------------------------------------------------------------------------------
    def _head_bm25(self, question: str) -> list[Hit]:
        import bm25s

        recs = self.records()
        if self._bm25 is None:
            tokens = bm25s.tokenize([r.head_text or r.file_name for r in recs], stopwords="en", stemmer=stemmer(),
                                    show_progress=False)
            self._bm25 = bm25s.BM25()
            self._bm25.index(tokens, show_progress=False)
        q = bm25s.tokenize([question], stopwords="en", stemmer=stemmer(), return_ids=False, show_progress=False)
        terms = q[0] if q and q[0] else []
        if not terms:
            return []
        scores = np.asarray(self._bm25.get_scores(terms), dtype=np.float32)
        return self._ranked(scores, "head_bm25")

    def _head_matrix(self) -> np.ndarray | None:
        emb = self.embedder
        if emb is None:
            return None
        if self._head_vecs is None:
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.store.config.embedder)
            rows = []
            for r in self.records():
                path = self.store.doc_dir(r.doc_id) / f"paper_head-{name}.npy"
                vec = None
                if path.exists():
                    try:
                        vec = np.load(path)
                    except (OSError, ValueError):
                        vec = None
                if vec is None or vec.shape != (emb.dim,):
                    vec = emb.encode([f"{r.title}\n{r.abstract}".strip() or r.file_name], kind="passage")[0]
                    with contextlib.suppress(OSError):  # a read-only index still answers
                        atomic_write_npy(path, vec.astype(np.float32))
                rows.append(vec.astype(np.float32))
            self._head_vecs = np.stack(rows) if rows else np.zeros((0, emb.dim), np.float32)
        return self._head_vecs

    def _head_dense(self, query: Query) -> list[Hit]:
        mat = self._head_matrix()
        if mat is None or not len(mat):
            return []
        q = query.vector(self.embedder).astype(np.float32)
        return self._ranked(mat @ q, "head_dense")

    def _ranked(self, scores: np.ndarray, name: str) -> list[Hit]:
        recs = self.records()
        order = np.argsort(-scores, kind="stable")
        return [Hit(recs[i].doc_id, 0, float(scores[i]), name) for i in order if scores[i] > 0 or name == "head_dense"]

    def _page_pool(self, query: Query, pool: str) -> list[Hit]:
        if pool not in self.store.config.pools:
            return []
        hits = self.index.search(query, pool=pool, k=PAGE_DEPTH)
        best: dict[str, float] = {}
        for h in hits:  # best-first: the first page seen of a paper is its best
            best.setdefault(h.doc_id, h.score)
        return [Hit(d, 0, s, f"text_{pool}") for d, s in best.items()]

    def rankings(self, question: str | Query) -> dict[str, list[Hit]]:
        """Each ranking of the papers, best first (doc-level Hits with page 0); the question is embedded
        once for all of them (:class:`~trident_local.query.Query`)."""
        query = Query.of(question)
        out = {"head_bm25": self._head_bm25(query.text), "head_dense": self._head_dense(query),
               "text_bm25": self._page_pool(query, "bm25"), "text_dense": self._page_pool(query, "dense")}
        return {k: v for k, v in out.items() if v}

    def search(self, question: str | Query, k: int = 10) -> list[PaperHit]:
        """Papers ranked for ``question`` by RRF of the rankings above."""
        query = Query.of(question)
        question = query.text
        if not question.strip():
            raise TridentError("the question is empty")
        if not self.records():
            raise TridentError(f"{self.store.root} holds no documents yet; add some with `trident index`")
        ranks = self.rankings(query)
        fused = rrf_fuse(list(ranks.values()), name="papers")
        seen = {h.doc_id for h in fused}
        fused += [Hit(r.doc_id, 0, 0.0, "papers") for r in self.records() if r.doc_id not in seen]
        named = set(self.named_in(question))
        out = []
        for i, h in enumerate(fused):
            if i >= k and h.doc_id not in named:
                continue
            r = self.record(h.doc_id)
            pos = {name: j + 1 for name, lst in ranks.items() for j, x in enumerate(lst) if x.doc_id == h.doc_id}
            out.append(PaperHit(r.paper_id, r.doc_id, h.score, r.title, pos, h.doc_id in named))
        return out

    # -- selection -------------------------------------------------------------------------------------------
    def names(self) -> dict[str, set[str]]:
        """doc_id -> the coined names that belong to that paper alone in this collection."""
        if self._names is None:
            per = {r.doc_id: coined_names(r) for r in self.records()}
            count: Counter[str] = Counter(n for names in per.values() for n in names)
            # a word any head writes in lower case is an ordinary word ("prompting"), not a name
            plain = {t for r in self.records() for t in _TOKEN.findall(f"{r.title} {r.abstract}") if t.islower()}
            self._names = {d: {n for n in names if count[n] == 1 and n not in plain} for d, names in per.items()}
        return self._names

    def named_in(self, question: str) -> list[str]:
        """doc_ids of the papers whose distinctive name the question uses (case-insensitive, whole tokens)."""
        q = " " + " ".join(_tokens(question)) + " "
        q_colon = " ".join(question.lower().split())
        out = []
        for d, names in self.names().items():
            for n in names:
                if f" {n} " in q or (" " in n and n in q_colon):
                    out.append(d)
                    break
        return out

    def select(self, question: str, hits: Sequence[PaperHit], *, n: int | None = None,
               max_papers: int = 3) -> list[PaperHit]:
        """The papers to answer from: ``n`` if given; else the named ones (best ranked first, at most
        ``max_papers``); else the best one, or the best two when the question speaks of several papers."""
        if not hits:
            return []
        if n is not None:
            return list(hits[: max(1, n)])
        plural = bool(_PLURAL_CUES.search(question))
        named = [h for h in hits if h.named]
        if named:
            chosen = named[:max_papers]
            if len(chosen) == 1 and plural:
                chosen += [h for h in hits if not h.named][:1]
            return chosen
        return list(hits[: 2 if plural else 1])
