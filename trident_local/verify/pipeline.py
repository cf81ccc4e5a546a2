"""AtomCite end to end: parse -> judge the cited page (text and image channels) -> merge -> repair.

    from trident_local.verify import Verifier
    verifier = Verifier.from_index("idx", text="none", window=2)   # the no-model CPU default
    report = verifier.verify("Revenue grew 12% in 2023 [p. 14].", doc="report.pdf")
    print(report.corrected_answer)

Each (claim, cited page) pair is judged on the cited page only; both channels
run at the same time, each in batches. Pairs whose verdict is "unsupported" or
"partial" then have their window pages judged (both channels again, merged) to
propose a replacement page; window verdicts never become the pair's verdict.
:meth:`Verifier.verify_claims` does the same for many documents at once (the
benchmark uses it so that all its pairs share batches).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from trident_local.errors import TridentError
from trident_local.verify.compose import compose
from trident_local.verify.floor import floor
from trident_local.verify.judge_common import Judge, JudgeItem, PageSource, StorePages
from trident_local.verify.merge import merge
from trident_local.verify.parse import decompose, parse_answer
from trident_local.verify.regions import RegionCheck, check_claim, cited_region_holds
from trident_local.verify.repair import decide, needs_window, region_decision, window_pages
from trident_local.verify.types import (
    FIX_PAGE,
    IMAGE,
    SUPPORTED,
    TEXT,
    UNSUPPORTED,
    Claim,
    ClaimResult,
    Judgement,
    VerificationReport,
)
from trident_local.windows import WindowSpec


class Verifier:
    """Verify and correct page citations against one index."""

    def __init__(
        self,
        pages: PageSource,
        text_judge: Judge | None,
        image_judge: Judge | None = None,
        *,
        window: int = 2,
        decomposer: Any = None,
        store: Any = None,
        regions: bool = True,
        support_scorer: Judge | None = None,
    ):
        """``support_scorer``: the no-model scorer, run beside model judges on every cited page: its
        score is recorded with each model verdict (``Judgement.support_score``)."""
        if text_judge is None and image_judge is None:
            raise TridentError("verification needs at least one judge (text or image channel)")
        if window < 0:
            raise TridentError(f"the page window must be 0 or more, not {window}")
        self.pages = pages
        self.text_judge = text_judge
        self.image_judge = image_judge
        self.window = window
        self.decomposer = decomposer
        self.store = store
        # Region checks read the pages' layout (line boxes) from the index, so they need its ``store``.
        self.regions = regions and store is not None
        self.pages_judged = 0  # (claim, page) items sent to the judges: cited pages + window pages
        self.support_scorer = support_scorer

    @classmethod
    def from_index(
        cls,
        index: Any,
        *,
        text: str | None = None,
        image: str = "same",
        window: int = 2,
        decompose_with: str | None = None,
        params: Any = None,
        batch_size: int = 16,
        max_tokens: int | None = None,
        regions: bool = True,
    ) -> Verifier:
        """Build judges from model profiles.

        ``text``: a chat profile, or "none" for the no-model support scorer; default: the
        index's configured chat profile. ``image``: a VLM profile, "none", or "same" (the
        text model when it takes images). ``decompose_with``: a chat profile for atomic
        claim decomposition (off by default). ``params``: ScorerParams for the no-model scorer.
        ``batch_size`` / ``max_tokens``: requests per chat call / tokens per judge reply (default:
        the longest reply the judge schema admits). ``regions``: run the region check (where on the
        page the claim's values are) before the page policy.
        """
        from trident_local.index import Index
        from trident_local.models.profiles import NO_MODEL
        from trident_local.models.runtime import Models
        from trident_local.verify.judge_image import VLMImageJudge
        from trident_local.verify.judge_text import LLMTextJudge, NoModelSupportScorer

        if isinstance(index, Index):  # the index's runtime: the models its other stages use
            store, models = index.store, index.models
        elif hasattr(index, "document") and hasattr(index, "page_image"):
            store, models = index, Models(index.config)
        else:
            opened = Index.open(index)
            store, models = opened.store, opened.models
        pages = StorePages(store)
        text = text if text is not None else models.profile_name("chat")

        def model(profile: str) -> Any:
            return models.get("chat", profile)

        # The scorer's weights were fitted on word windows of every word: an index whose dense
        # vectors are of other passages (token windows, stop words left out) has the scorer cut
        # and embed its own windows.
        cfg = store.config
        scorer_windows = WindowSpec(cfg.chunk_words, cfg.chunk_stride)
        scorer = NoModelSupportScorer(pages, embedder_profile=cfg.embedder, models=models, params=params,
                                      windows=scorer_windows, reuse_index_vectors=cfg.windows() == scorer_windows)
        if text.lower() == NO_MODEL:
            text_judge: Judge = scorer
        else:
            text_judge = LLMTextJudge(model(text), pages, batch_size=batch_size, max_tokens=max_tokens)
        image_judge: Judge | None = None
        if image == "same":
            if text.lower() != NO_MODEL and getattr(model(text), "supports_images", False):
                image_judge = VLMImageJudge(model(text), pages, batch_size=batch_size, max_tokens=max_tokens)
        elif image.lower() != NO_MODEL:
            image_judge = VLMImageJudge(model(image), pages, batch_size=batch_size, max_tokens=max_tokens)
        decomposer = model(decompose_with) if decompose_with and decompose_with.lower() != NO_MODEL else None
        model_judged = text.lower() != NO_MODEL or image_judge is not None
        return cls(pages, text_judge, image_judge, window=window, decomposer=decomposer, store=store,
                   regions=regions, support_scorer=scorer if model_judged else None)

    @property
    def judges(self) -> dict[str, str]:
        return {ch: j.name for ch, j in ((TEXT, self.text_judge), (IMAGE, self.image_judge)) if j is not None}

    @property
    def model_calls(self) -> int:
        return sum(j.calls for j in (self.text_judge, self.image_judge) if j is not None)

    def _region_check(self, doc_id: str, claim: str, page: int) -> RegionCheck | None:
        if not self.regions:
            return None
        from trident_local.regions.attach import layout_of

        return check_claim(layout_of(self.store, doc_id, page), claim)

    # -- judging ---------------------------------------------------------------------------------------
    def _judge(self, items: list[JudgeItem]) -> list[tuple[Judgement | None, Judgement | None]]:
        """Both channels on the same items, at the same time (one thread per channel) unless they share a model."""
        if not items:
            return []
        self.pages_judged += len(items)
        judges = [j for j in (self.text_judge, self.image_judge) if j is not None]
        shared = len(judges) == 2 and getattr(judges[0], "model", None) is getattr(judges[1], "model", 0)
        if len(judges) == 2 and shared:  # one model object serves both: not every backend is re-entrant
            return list(zip(judges[0].judge(items), judges[1].judge(items), strict=True))
        if len(judges) == 2:
            with ThreadPoolExecutor(max_workers=2) as ex:
                futs = [ex.submit(j.judge, items) for j in judges]
                outs = [f.result() for f in futs]
            return list(zip(outs[0], outs[1], strict=True))
        out = judges[0].judge(items)
        return [(j, None) if self.text_judge is not None else (None, j) for j in out]

    def _below_floor(self, c: Claim, doc_id: str, page: int, *judgements: Judgement | None) -> str:
        """Why a model judge's "supported" of ``c`` on ``page`` cannot stand ("" when it can, or when no
        model judged): :func:`trident_local.verify.floor.floor` on the claim's answer and the page's text."""
        if not any(j is not None and j.score is None and j.verdict == SUPPORTED for j in judgements):
            return ""  # the no-model scorer (it sets score) is not a model verdict
        return floor(c.answer if c.answer is not None else c.text, [self.pages.text(doc_id, page)]) or ""

    def _support_scores(self, items: list[JudgeItem]) -> list[float | None]:
        """The no-model scorer's support score of each item, beside the model judges (None without it)."""
        if self.support_scorer is None or not items:
            return [None] * len(items)
        return [j.score for j in self.support_scorer.judge(items)]

    def verify_claims(self, claims: Sequence[tuple[str, Claim]]) -> list[list[ClaimResult]]:
        """Results for (doc_id, claim) inputs: one ClaimResult per cited page, in the claims' order."""
        pairs = [(doc_id, c, p) for doc_id, c in claims for p in c.pages]
        n_pages = {d: self.pages.n_pages(d) for d in dict.fromkeys(d for d, _ in claims)}
        in_range = [1 <= p <= n_pages[d] for d, _, p in pairs]
        cited = [JudgeItem(c.text, d, p) for (d, c, p), ok in zip(pairs, in_range, strict=True) if ok]
        judged = iter(self._judge(cited))
        scores = iter(self._support_scores(cited))
        verdicts: list[tuple[str, list[str], list[Judgement]]] = []
        floors: list[str] = []
        for (d, c, p), ok in zip(pairs, in_range, strict=True):
            floors.append("")
            if not ok:
                verdicts.append((UNSUPPORTED, ["page-out-of-range"], []))
                continue
            t, i = next(judged)
            score = next(scores)
            judgements = [j for j in (t, i) if j is not None]
            model_judged = [j for j in judgements if j.score is None]  # the no-model scorer sets score
            for j in model_judged:
                j.support_score = score
            v, flags = merge(t, i)
            if v == SUPPORTED and (why := self._below_floor(c, d, p, t, i)):
                # a model's "supported" does not stand for an empty answer or values not on the page
                v, flags, floors[-1] = UNSUPPORTED, [*flags, "floor"], why
            verdicts.append((v, flags, judgements))
        checks = [self._region_check(d, c.text, p) if ok else None
                  for (d, c, p), ok in zip(pairs, in_range, strict=True)]
        by_region = [region_decision(v, rc.verdict if rc else None,
                                     cited_region_holds(c.regions, p, rc) if rc else None)
                     for (_, c, p), (v, _, _), rc in zip(pairs, verdicts, checks, strict=True)]
        # Window pages: judged only for pairs that need a proposal; identical items judged once.
        wanted: dict[JudgeItem, None] = {}
        for (d, c, p), (v, _, _), reg in zip(pairs, verdicts, by_region, strict=True):
            if reg is None and needs_window(v):
                for wp in window_pages(p, n_pages[d], self.window):
                    wanted[JudgeItem(c.text, d, wp)] = None
        witems = list(wanted)
        wjudged = dict(zip(witems, self._judge(witems), strict=True))
        wregions = {it: self._region_check(it.doc_id, it.claim, it.page) for it in witems}
        results: list[ClaimResult] = []
        for (d, c, p), (v, flags, judgements), rc, reg, why in zip(pairs, verdicts, checks, by_region, floors,
                                                                  strict=True):
            wv: dict[int, str] = {}
            ws: dict[int, float | None] = {}
            if reg is None and needs_window(v):
                for wp in window_pages(p, n_pages[d], self.window):
                    item = JudgeItem(c.text, d, wp)
                    t, i = wjudged[item]
                    wrc = wregions[item]
                    wv[wp] = SUPPORTED if wrc is not None and wrc.verdict == SUPPORTED else merge(t, i)[0]
                    if wv[wp] == SUPPORTED and self._below_floor(c, d, wp, t, i):  # nor can it re-point
                        wv[wp] = UNSUPPORTED
                    ws[wp] = t.score if t is not None else None
            if reg is not None:
                action, new_page, more = reg[0], None, reg[1]
            else:
                action, new_page, more = decide(v, p, wv, ws)
            final = wregions.get(JudgeItem(c.text, d, new_page)) if action == FIX_PAGE else rc
            results.append(ClaimResult(claim=c, cited_page=p, verdict=v, action=action, new_page=new_page,
                                       flags=[*flags, *more], judgements=judgements, window=wv,
                                       regions=final.region_dicts() if final and final.verdict == SUPPORTED else [],
                                       region_check=final.how if final else "", floor=why))
        grouped: list[list[ClaimResult]] = []
        it = iter(results)
        for _, c in claims:
            grouped.append([next(it) for _ in c.pages])
        return grouped

    # -- one answer ------------------------------------------------------------------------------------
    def verify(self, answer: str | dict[str, Any], doc: str) -> VerificationReport:
        """Verify and correct the citations of ``answer`` against document ``doc`` (id or file name)."""
        doc_id = self.store.resolve(doc) if self.store is not None else doc
        file_name = self.store.document(doc_id).file_name if self.store is not None else doc
        try:
            parsed = parse_answer(answer)
        except ValueError as e:
            raise TridentError(f"cannot read the answer: {e}") from e
        if self.decomposer is not None:
            parsed = decompose(parsed, self.decomposer)
        calls0 = self.model_calls
        grouped = self.verify_claims([(doc_id, c) for c in parsed.claims])
        results = [r for g in grouped for r in g]
        warnings = list(parsed.warnings)
        if not parsed.claims:
            warnings.append("no page citations found in the answer; nothing to verify")
        return VerificationReport(
            doc_id=doc_id,
            file_name=file_name,
            answer_format=parsed.format,
            results=results,
            corrected_answer=compose(parsed, results),
            window=self.window,
            judges=self.judges,
            uncited=parsed.uncited,
            warnings=warnings,
            model_calls=self.model_calls - calls0 + (len(parsed.claims) if self.decomposer is not None else 0),
        )
