"""The text channel: the page's text (text layer or OCR) and the claim -> a verdict.

Two judges:

- :class:`LLMTextJudge` asks a chat model (JSON verdict supported | partial |
  unsupported with a short rationale; untrusted output handled by
  :class:`~trident_local.verify.judge_common.ChatJudge`).
- :class:`NoModelSupportScorer` is the CPU default when no chat model is
  configured (profile "none"). It is a **no-model support scorer, not a judge
  that reads**: it scores lexical and embedding evidence that the page states the
  claim and says "supported" when a logistic score passes a calibrated threshold,
  "unsupported" otherwise (it never says "partial"). Features
  (:mod:`~trident_local.verify.support_features`): the claim's numbers found on
  the page, its entity words found, content-word coverage (plain, weighted by
  within-document rarity, and of its worst-covered clause), and the best cosine
  similarity between the claim and a word window of the page, from the packaged
  sentence embedder (all-MiniLM-L6-v2).

  What it cannot do: read charts, figures or layout (only text that the PDF or
  OCR gives); compute (sums, differences, counts of things on a page); notice a
  negation or a swapped relation when the same words are on the page; tell a
  number that appears on the page for another reason from the claimed one. A
  page without text gets "unknown" (abstain), never "unsupported".

  Calibration: the weights and the threshold come from
  :func:`calibrate` - a logistic regression fitted on the calibration split of
  a built citation benchmark (whole documents held out from the test split; see
  :mod:`trident_local.evaluate.citations_build`), then the threshold on its
  probability that maximises binary accuracy on that same calibration split.
  :data:`DEFAULT_PARAMS` records the values shipped and how they were obtained.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from trident_local.logistic import LogisticParams
from trident_local.models.budget import char_caps
from trident_local.verify.judge_common import JUDGE_INSTRUCTIONS, ChatJudge, JudgeItem, PageSource
from trident_local.verify.support_features import FEATURES, PageTerms, idf, lexical_features
from trident_local.verify.types import SUPPORTED, TEXT, UNKNOWN, UNSUPPORTED, Judgement
from trident_local.windows import WindowSpec

NO_TEXT = "the page has no text (no text layer and no OCR)"


class LLMTextJudge(ChatJudge):
    """Asks a chat model whether the page text supports the claim (page text cut at ``max_chars``)."""

    channel = TEXT

    def __init__(self, model: Any, pages: PageSource, *, batch_size: int = 16, max_tokens: int | None = None,
                 max_chars: int = 6000):
        super().__init__(model, pages, batch_size=batch_size, max_tokens=max_tokens)
        self.max_chars = max_chars

    def skip_reason(self, item: JudgeItem) -> str | None:
        return None if self.pages.text(item.doc_id, item.page).strip() else NO_TEXT

    def messages(self, item: JudgeItem, max_chars: int | None = None) -> list[Any]:
        from trident_local.models.protocols import Message

        text = self.pages.text(item.doc_id, item.page)
        cap = self.max_chars if max_chars is None else max_chars
        if len(text) > cap:
            text = text[:cap] + " [...]"
        return [
            Message("system", JUDGE_INSTRUCTIONS),
            Message("user", f"Claim: {item.claim}\n\nPage {item.page} text:\n{text}"),
        ]

    def message_versions(self, item: JudgeItem) -> Iterator[tuple[str, list[Any]]]:
        """The page text's tail is cut to fit the model's context (down to 400 characters)."""
        yield "", self.messages(item)
        full = min(len(self.pages.text(item.doc_id, item.page)), self.max_chars)
        for cap in char_caps(full, 400):
            yield f"page text to {cap} chars", self.messages(item, cap)


# -- the no-model support scorer -----------------------------------------------------------------------
class ScorerParams(LogisticParams):
    """Logistic weights over FEATURES, the decision threshold, and how they were calibrated."""


# Shipped defaults: `fit_params` on the calibration split of the MMLongBench-Doc citation instances
# (`benchmarks/citations.py`, build seed 0, evidence on one page, 288 instances over 27 documents held
# out from the 714 test instances; accuracy-maximising threshold). Re-fit with
# `trident eval citations run ... --save-params FILE` and pass FILE back with `--params`.
DEFAULT_PARAMS = ScorerParams(
    weights={
        "has_numbers": 0.10799859069856295,
        "numbers_found": -0.23163808722663373,
        "numbers_missing": -0.5764440176958758,
        "entities_found": 0.7527123438468193,
        "coverage": 0.17000899280220955,
        "idf_coverage": 0.9358493296069208,
        "min_clause_coverage": 1.7642419775726157,
        "clauses_verbatim": 0.2034506663937254,
        "any_clause_verbatim": 1.1472441663222703,
        "similarity": 0.07671296920300368,
    },
    bias=-1.8866966022095248,
    threshold=0.382481,
    calibration={
        "method": "logistic regression on FEATURES (sklearn, L2, C=1) + accuracy-maximising threshold",
        "objective": "accuracy",
        "data": "MMLongBench-Doc citation instances (93-document subset), calib split: 288 instances / 27 "
                "documents, disjoint from the test split; build seed 0, single-page evidence",
        "n": 286,
        "calibration_accuracy": 0.8287,
        "calibration_supported_recall": 0.6875,
    },
)


def fit_params(features: Sequence[dict[str, float]], labels: Sequence[bool], *, c: float = 1.0,
               objective: str = "accuracy", info: dict[str, Any] | None = None) -> ScorerParams:
    """Fit logistic weights (sklearn, L2, ``C=c``) and pick the threshold for ``objective``.

    ``objective``: "accuracy" (default) - the threshold with the best binary accuracy on
    the calibration data, among midpoints of its sorted probabilities (ties toward 0.5);
    "recall:R" - the highest threshold that keeps at least a share R of the calibration's
    supported examples (a conservative operating point: fewer true claims removed, more
    errors missed). Both are exactly reproducible from the same data.
    """
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(labels, dtype=int)
    if len(set(y.tolist())) < 2:
        raise ValueError("calibration needs both supported and unsupported examples")
    x = np.array([[f[k] for k in FEATURES] for f in features], dtype=np.float64)
    lr = LogisticRegression(C=c, max_iter=2000).fit(x, y)
    params = ScorerParams(weights=dict(zip(FEATURES, map(float, lr.coef_[0]), strict=True)),
                          bias=float(lr.intercept_[0]), threshold=0.5)
    probs = np.array([params.probability(f) for f in features])
    if objective == "accuracy":
        params.threshold, acc = best_threshold(probs, y)
        how = "accuracy-maximising threshold"
    elif objective.startswith("recall:"):
        target = float(objective.split(":", 1)[1])
        if not 0.0 < target <= 1.0:
            raise ValueError("recall target must be in (0, 1]")
        pos = np.sort(probs[y == 1])
        params.threshold = round(float(pos[int(np.floor((1.0 - target) * len(pos)))]), 6)
        acc = float(((probs >= params.threshold).astype(int) == y).mean())
        how = f"highest threshold keeping >= {target:g} of the supported examples"
    else:
        raise ValueError(f"unknown calibration objective {objective!r} (accuracy | recall:R)")
    pred = probs >= params.threshold
    params.calibration = {
        "method": f"logistic regression on FEATURES (sklearn, L2, C={c:g}) + {how}",
        "objective": objective,
        "n": len(y),
        "n_supported": int(y.sum()),
        "calibration_accuracy": acc,
        "calibration_supported_recall": float(pred[y == 1].mean()),
        **(info or {}),
    }
    return params


def best_threshold(probs: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The threshold t (predict supported when p >= t) with the best accuracy on (probs, y)."""
    order = np.unique(probs)
    cands = np.concatenate([[0.0], (order[:-1] + order[1:]) / 2, [1.0 + 1e-9]]) if len(order) > 1 else np.array([0.5])
    best_t, best_acc = 0.5, -1.0
    for t in cands:
        acc = float(((probs >= t).astype(int) == y).mean())
        if acc > best_acc + 1e-12 or (abs(acc - best_acc) <= 1e-12 and abs(t - 0.5) < abs(best_t - 0.5)):
            best_t, best_acc = float(t), acc
    return round(best_t, 6), best_acc


class NoModelSupportScorer:
    """The no-model CPU default of the text channel (see the module docstring for what it can't do)."""

    channel = TEXT
    name = "no-model-support-scorer"

    def __init__(self, pages: PageSource, *, embedder: Any = None, embedder_profile: str = "minilm",
                 models: Any = None, params: ScorerParams | None = None,
                 windows: WindowSpec | None = None, cache_pages: int = 4096, reuse_index_vectors: bool = True,
                 conservative: bool = True):
        """``embedder``: a built TextEmbedder; else ``embedder_profile`` from ``models`` (a
        :class:`~trident_local.models.runtime.Models`, e.g. the index's; when None, one that shares the process's built models).
        ``conservative``: "unknown" (keep, flag) where the text cannot decide, not "unsupported"."""
        self.pages = pages
        self.conservative = conservative  # "unknown" (keep, flag) where text cannot decide, not "unsupported"
        self._embedder = embedder
        self.embedder_profile = embedder_profile
        self.models = models
        self.params = params or DEFAULT_PARAMS
        self.windows = windows or WindowSpec(160, 120)
        self.calls = 0  # no model calls; kept for the Judge protocol
        self._terms: dict[str, list[PageTerms]] = {}
        self._idf: dict[str, dict[str, float]] = {}
        self._vecs: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()
        self._cache_pages = cache_pages
        # The index's dense-pool window embeddings are reused when present (same embedder and,
        # given the index's WindowSpec, the same windows as the dense pool); otherwise pages are
        # cut by ``windows`` and embedded here.
        self.reuse_index_vectors = reuse_index_vectors
        self._index_vecs: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            if self.models is None:
                from trident_local.models.runtime import Models

                self.models = Models()
            self._embedder = self.models.get("embedder", self.embedder_profile)
        return self._embedder

    # -- per-document and per-page caches ----------------------------------------------------------
    def _doc_terms(self, doc_id: str) -> list[PageTerms]:
        if doc_id not in self._terms:
            n = self.pages.n_pages(doc_id)
            self._terms[doc_id] = [PageTerms.of(self.pages.text(doc_id, p)) for p in range(1, n + 1)]
            self._idf[doc_id] = idf(t.terms for t in self._terms[doc_id])
        return self._terms[doc_id]

    def _windows(self, text: str) -> list[str]:
        return self.windows.cut(text, self.embedder)

    def _stored(self, doc_id: str) -> tuple[np.ndarray, np.ndarray] | None:
        if doc_id not in self._index_vecs:
            get = getattr(self.pages, "window_vectors", None) if self.reuse_index_vectors else None
            self._index_vecs[doc_id] = get(doc_id) if get else None
        return self._index_vecs[doc_id]

    def _page_vectors(self, keys: Sequence[tuple[str, int]]) -> None:
        for k in dict.fromkeys(keys):
            stored = None if k in self._vecs else self._stored(k[0])
            if stored is not None:
                vecs, pages = stored
                rows = vecs[pages == k[1]]
                if len(rows):
                    self._vecs[k] = rows
        missing = [k for k in dict.fromkeys(keys) if k not in self._vecs]
        texts: list[str] = []
        spans: dict[tuple[str, int], tuple[int, int]] = {}
        for k in missing:
            ws = self._windows(self.pages.text(*k))
            spans[k] = (len(texts), len(texts) + len(ws))
            texts += ws
        vecs = self.embedder.encode(texts, kind="passage") if texts else np.zeros((0, 1), np.float32)
        for k in missing:
            a, b = spans[k]
            self._vecs[k] = vecs[a:b]
        for k in keys:
            if k in self._vecs:
                self._vecs.move_to_end(k)
        while len(self._vecs) > self._cache_pages:
            self._vecs.popitem(last=False)

    # -- scoring -----------------------------------------------------------------------------------
    def features(self, items: Sequence[JudgeItem]) -> list[dict[str, float] | None]:
        """FEATURES for each item; None where the page has no text."""
        keys = [(it.doc_id, it.page) for it in items]
        has_text = [bool(self.pages.text(*k).strip()) for k in keys]
        self._page_vectors([k for k, h in zip(keys, has_text, strict=True) if h])
        claims = list(dict.fromkeys(it.claim for it, h in zip(items, has_text, strict=True) if h))
        cvec = dict(zip(claims, self.embedder.encode(claims, kind="query"), strict=True)) if claims else {}
        out: list[dict[str, float] | None] = []
        for it, k, h in zip(items, keys, has_text, strict=True):
            if not h:
                out.append(None)
                continue
            terms = self._doc_terms(it.doc_id)[it.page - 1]
            feats = lexical_features(it.claim, terms, self._idf[it.doc_id])
            pv = self._vecs.get(k)
            if pv is None:  # evicted between the two loops (tiny caches): recompute
                self._page_vectors([k])
                pv = self._vecs[k]
            feats["similarity"] = float((pv @ cvec[it.claim]).max()) if len(pv) else 0.0
            out.append(feats)
        return out

    def _cannot_decide(self, it: JudgeItem, feats: dict[str, float]) -> str | None:
        """See :mod:`trident_local.verify.undecidable`; off when ``conservative`` is False."""
        if not self.conservative:
            return None
        from trident_local.verify.undecidable import cannot_decide

        store = getattr(self.pages, "store", None)
        page = store.document(it.doc_id).page(it.page) if store is not None else None
        return cannot_decide(it.claim, self.pages.text(it.doc_id, it.page), feats, page)

    def judge(self, items: Sequence[JudgeItem]) -> list[Judgement]:
        out = []
        for it, feats in zip(items, self.features(items), strict=True):
            if feats is None:
                out.append(Judgement(UNKNOWN, "", TEXT, it.page, self.name, error=NO_TEXT))
                continue
            p = self.params.probability(feats)
            verdict = SUPPORTED if p >= self.params.threshold else UNSUPPORTED
            if verdict == UNSUPPORTED and (why_not := self._cannot_decide(it, feats)):
                out.append(Judgement(UNKNOWN, why_not, TEXT, it.page, self.name, score=round(p, 4),
                                     error="text channel cannot decide"))
                continue
            why = (f"score {p:.2f} {'>=' if verdict == SUPPORTED else '<'} {self.params.threshold:.2f}: "
                   f"numbers {feats['numbers_found']:.0%}, entities {feats['entities_found']:.0%}, "
                   f"words {feats['coverage']:.0%}, similarity {feats['similarity']:.2f}")
            out.append(Judgement(verdict, why, TEXT, it.page, self.name, score=round(p, 4)))
        return out
