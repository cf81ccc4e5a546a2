"""Text analysis shared by every stage: words, stop words, stemming, terms, sentences, windows, question cues,
rule entities.

One home so that concept naming, the no-model reranker, the extractive answerers,
the support scorer and the trace answerer agree on what a word, a sentence and a
"how many" question are. Stemming is Snowball English via PyStemmer.

Four stop-word lists stay distinct because results depend on them:
:data:`STOP_WORDS` (scikit-learn's English list plus document-QA filler; terms for
concepts, reranking and extractive answers), :data:`CLAIM_STOP_WORDS` (function
and question words only, so that "first", "last", "several" still count when a
claim is checked against a page), :data:`TRACE_STOP_WORDS` (a short list plus
the words every question about papers uses: "paper", "value", "reported") and
:data:`EMBED_STOP_WORDS` (left out of the dense pool's passages).

Sentences come in two styles: :func:`sentences` (prose, abbreviation-aware,
white space collapsed) and :func:`page_sentences` (page text: a blank line also
ends a unit); :func:`sentence_spans` gives character spans for text that must be
cut and put back together (citation parsing).

Rule entities (:func:`pattern_entities`, :func:`query_entities`) are what the
no-model strategies know of names, numbers, dates and amounts: annotation tags
pages with them, the xkg router and the :class:`~trident_local.query.Query`
read them from the question, the extractive answerers look for them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from trident_local.stop_words_en import ENGLISH_STOP_WORDS

# -- stop words -------------------------------------------------------------------------------------------------------
_QA_FILLER = {"according", "report", "document", "page", "pages", "does", "did", "shown", "show", "shows", "using",
              "used", "use", "based", "also", "many", "much", "percentage", "number", "total"}
STOP_WORDS = frozenset(ENGLISH_STOP_WORDS | _QA_FILLER)

CLAIM_STOP_WORDS = frozenset("""a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can cannot could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his i if in into is it its itself let me more most my
    myself nor not of off on once only or other ought our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why with would you your yours yourself yourselves how many much
    whose according answer question please write list format given shown show shows s t also among per via will may
    might must shall etc""".split())  # noqa: SIM905

# What a new index leaves out of the passages it embeds: the function words that scikit-learn's list
# and the claim list agree on (articles, pronouns, prepositions, auxiliaries, negations, quantifiers). scikit-learn's list
# alone also holds content words a page may be about ("interest", "system", "three").
EMBED_STOP_WORDS = ENGLISH_STOP_WORDS & CLAIM_STOP_WORDS

TRACE_STOP_WORDS = frozenset("""a an the of in on for to and or is are was were be been by with as at from that this
    these those it its which what who whom whose when where why how does do did can could would should will shall may
    might than then there their they them we our us you your he she his her i me my not no yes into over under between
    among about after before paper papers work study show shows shown reported report according value values number
    use used using""".split())  # noqa: SIM905


# -- words, stems, terms ----------------------------------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]|\d+(?:[.,]\d+)*%?")
_TOKEN = re.compile(r"[a-z0-9]+")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*|\d+(?:\.\d+)?")


# Number spellings a keyword index must see as one: "1,577", "(1,577)", "$1577.00" and "1577" all read 1577;
# "95.20" and "95.2" read 95_2 (one token: bm25s splits on non-word characters); "FY2019" reads "FY 2019".
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DECIMAL = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?![\d.]*\d)")
_GLUED_YEAR = re.compile(r"\b([A-Za-z]{2,})((?:19|20)\d\d)\b")


def _decimal(m: re.Match) -> str:
    frac = m.group(2).rstrip("0")
    return f"{m.group(1)}_{frac}" if frac else m.group(1)


def keyword_text(text: str) -> str:
    """``text`` as a keyword index reads it: thousands separators and zero decimals gone, a decimal one
    token, a year split from a glued prefix, so that the spellings of one number meet."""
    text = _THOUSANDS.sub("", text)
    text = _DECIMAL.sub(_decimal, text)
    return _GLUED_YEAR.sub(r"\1 \2", text)


@lru_cache(maxsize=1)
def stemmer() -> Any:
    """The Snowball English stemmer (PyStemmer), built once; bm25s takes it as its ``stemmer``."""
    import Stemmer

    return Stemmer.Stemmer("english")


def stem_words(ws: Sequence[str]) -> list[str]:
    """Snowball stems of ``ws`` (lower-cased words), in order."""
    return stemmer().stemWords(list(ws)) if ws else []


def stem(w: str) -> str:
    return stemmer().stemWord(w)


def words(text: str) -> list[str]:
    """Surface words (original case) and numbers, in order."""
    return _WORD.findall(text)


def identifiers(text: str) -> list[str]:
    """Words as names are written (letters then letters or digits, joined by - or ': "GPT-4", "BM25") and
    decimal numbers, in order."""
    return _IDENT.findall(text)


def tokens(text: str) -> list[str]:
    """Lower-cased runs of letters and digits ("gpt-4" -> "gpt", "4")."""
    return _TOKEN.findall(text.lower())


def term_pairs(text: str) -> list[tuple[str, str]]:
    """(stemmed term, surface word) for each content word, in order."""
    kept = []
    for w in words(text):
        lw = w.lower()
        if lw in STOP_WORDS or (len(lw) < 2 and not lw.isdigit()):
            continue
        kept.append((lw.replace(",", "") if lw[0].isdigit() else lw, w))
    stems = iter(stem_words([t for t, _ in kept if not t[0].isdigit()]))
    return [(t if t[0].isdigit() else next(stems), w) for t, w in kept]


def terms(text: str) -> list[str]:
    """Stemmed content terms in order (numbers kept as written, minus thousands separators)."""
    return [t for t, _ in term_pairs(text)]


def content_terms(text: str, stop: frozenset[str] = CLAIM_STOP_WORDS) -> list[str]:
    """Stemmed content words of ``text`` (stop words and bare numbers left out), de-duplicated, in order."""
    toks = [t for t in tokens(text) if t not in stop and not t.isdigit() and len(t) > 1]
    return list(dict.fromkeys(stem_words(toks)))


def idf_table(docs: Sequence[Iterable[str]]) -> dict[str, float]:
    """Smoothed IDF, log(1 + N / df), over term collections."""
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    n = max(len(docs), 1)
    return {t: math.log(1.0 + n / c) for t, c in df.items()}


def weighted_overlap(
    query: Sequence[str], text_terms: Iterable[str], idf: dict[str, float], default_idf: float
) -> float:
    """Share of the query's IDF mass whose terms occur in the text (0..1)."""
    q = set(query)
    if not q:
        return 0.0
    have = set(text_terms)
    total = sum(idf.get(t, default_idf) for t in q)
    return sum(idf.get(t, default_idf) for t in q if t in have) / total if total else 0.0


def top_terms(groups: Sequence[Sequence[str]], n: int = 3) -> list[list[str]]:
    """Most distinctive terms per group (class-based TF-IDF: frequency in the group x log(1 + groups/df))."""
    idf = idf_table(groups)
    out = []
    for g in groups:
        tf = Counter(t for t in g if not t[0].isdigit() and len(t) > 2)
        ranked = sorted(tf, key=lambda t: (-tf[t] * idf.get(t, 0.0), t))
        out.append(ranked[:n])
    return out


# -- sentences and windows --------------------------------------------------------------------------------------------
_PROSE_SENT = re.compile(r"(?<=[.!?])(?<!\bal\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bFig\.)(?<!\bEq\.)\s+(?=[A-Z(\[])")
_PAGE_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"(])|\n{2,}")
_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s|$)")
_ENUMERATOR = re.compile(r"(?:^|\n)[ \t]*\d{1,2}$")  # "2." opening a numbered list item
_BREAK = re.compile(r"\n\s*\n|\n(?=[ \t]*(?:[-*•]|\d{1,2}[.)])\s)")
ABBREVIATIONS = frozenset({
    "e.g", "i.e", "etc", "fig", "figs", "no", "vs", "al", "cf", "approx", "mr", "mrs", "ms", "dr", "st", "inc",
    "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "eq", "sec", "tab", "vol", "ch", "ed", "p", "pp", "u.s", "u.k", "jr", "sr",
})


def sentences(text: str) -> list[str]:
    """Sentences of prose, white space collapsed; "et al.", "e.g.", "i.e.", "Fig.", "Eq." do not end one."""
    return [s.strip() for s in _PROSE_SENT.split(" ".join(text.split())) if s.strip()]


def page_sentences(text: str) -> list[str]:
    """Units of a page's text: sentences, and a blank line ends one too (headings, list items); not collapsed."""
    return _PAGE_SENT.split(text)


def _is_abbrev(text: str, dot: int) -> bool:
    """Does the period at ``dot`` close an abbreviation ("e.g.", "Fig.") or an initial ("J.")?"""
    m = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:dot])
    if not m:
        return False
    word = m.group(1).lower()
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences of ``text``, white space between them excluded; blank lines and list
    items ("- ", "2. ") start a new one."""
    cuts = {0, len(text)}
    for m in _END.finditer(text):
        if text[m.start()] == "." and (_is_abbrev(text, m.start()) or _ENUMERATOR.search(text[: m.start()])):
            continue
        cuts.add(m.end())
    for m in _BREAK.finditer(text):
        cuts.add(m.start())
    spans = []
    bounds = sorted(cuts)
    for a, b in zip(bounds, bounds[1:], strict=False):
        seg = text[a:b]
        if seg.strip():
            lead = len(seg) - len(seg.lstrip())
            spans.append((a + lead, a + len(seg.rstrip())))
    return spans


def windows(sents: Sequence[str], max_words: int) -> list[str]:
    """Runs of whole sentences of at most ``max_words`` words (a longer sentence stands alone)."""
    out, cur, n = [], [], 0
    for s in sents:
        w = len(s.split())
        if cur and n + w > max_words:
            out.append(" ".join(cur))
            cur, n = [], 0
        cur.append(s)
        n += w
    if cur:
        out.append(" ".join(cur))
    return out


# -- question cues ----------------------------------------------------------------------------------------------------
_CHOICES = re.compile(r"(\([A-Da-d]\)|\b[A-D][.)]\s|\boptions?\s*:|\bchoose\b|\bwhich of the following\b|"
                      r"\bor\b[^?]*\?\s*$)", re.I)
_SHORT = re.compile(r"^\s*(how many|how much|what (?:year|date|time|percentage|percent|number|is the (?:name|number|"
                    r"value|total|amount|title|url|email))|which year|when|who|whom|whose|what's the (?:name|number))\b", re.I)
_NUMERIC = re.compile(r"\b(how many|how much|percentage|percent|proportion|ratio|rate|number of|amount|total|"
                      r"average|median|sum|difference|increase|decrease|growth|cost|price|revenue|value)\b", re.I)
_LOCATION = re.compile(r"\b(where|which (?:page|section|chapter|slide|part|figure|table)|in which (?:page|section|"
                       r"chapter|slide|part)|what page|what section|located)\b", re.I)
_EXPECT: list[tuple[str, re.Pattern[str]]] = [
    ("percent", re.compile(r"\b(percentage|percent|share of|proportion)\b", re.I)),
    ("money", re.compile(r"\b(how much money|cost|price|revenue|income|spend|spent|paid|salary|budget|dollars?|"
                         r"usd)\b", re.I)),
    ("count", re.compile(r"\b(how many|number of|count)\b", re.I)),
    ("year", re.compile(r"\b(what year|which year|in what year|when)\b", re.I)),
    ("number", re.compile(r"\b(how much|how long|how old|ratio|rate|average|median|score|value)\b", re.I)),
]
STRUCTURAL_CUES = re.compile(r"\b(section|sections|chapter|appendix|page|pages|slide|slides|table of contents|heading|title|part|"
                             r"introduction|conclusion|abstract|summary|overview|first|last|final|beginning|end|cover|footnote|"
                             r"references?|bibliography)\b", re.I)
ENTITY_CUES = re.compile(r"\b(how much|how many|what percentage|what percent|what year|which year|when|who|whom|whose|name of|"
                         r"what is the (?:number|value|amount|total|rate|ratio|price|cost))\b", re.I)
# Questions about papers (trace): a number asked for, a named thing asked for, an explanation, an extreme.
NUMERIC_QUESTION = re.compile(
    r"\b(how many|how much|what percentage|what proportion|what fraction|which year|what year|how large|how long|"
    r"how big|how high|how low|by how much|what (?:is |was |are |were )?(?:the )?(?:[\w-]+ ){0,3}(?:number|"
    r"percentage|proportion|ratio|accuracy|score|f1|f-1|value|weight|size|count|total|average|mean|rate|"
    r"precision|recall|macro-f1|micro-f1|bleu|rouge|auc|gain|improvement|drop|cost|time|alpha|threshold))\b", re.I)
ENTITY_QUESTION = re.compile(
    r"\b(?:which|what)\s+(?:[\w-]+\s+){0,4}?(system|model|method|approach|framework|toolkit|tool|library|"
    r"dataset|benchmark|work|metric|algorithm|retriever|baseline|technique|module|architecture|corpus|"
    r"language model|llm|solver|reasoner)s?\b|\bwhich (?:system|one) is it\b", re.I)
EXPLAIN_QUESTION = re.compile(
    r"\bwhat (?:does|do|did) (.+?) (represent|denote|indicate|stand for|mean|measure|show)s?\b", re.I)
SUPERLATIVE = re.compile(r"\b(highest|best|largest|most|greatest|top|maximum|lowest|worst|smallest|least|fewest|"
                         r"minimum)\b", re.I)
LOW_SUPERLATIVES = frozenset({"lowest", "worst", "smallest", "least", "fewest", "minimum"})
RESULT_CUES = re.compile(r"\b(accuracy|accuracies|f1|f-1|scores?|statistics|test size|percentage|results?|"
                         r"performance)\b", re.I)


_KINDS = [("multiple-choice", _CHOICES), ("short-extractive", _SHORT)]
_ANSWER_TYPES = [("location", _LOCATION), ("numeric", _NUMERIC)]  # location first: "which page shows the revenue"


def _first_cue(question: str, cues: Sequence[tuple[str, re.Pattern[str]]], default: str) -> str:
    return next((name for name, rx in cues if rx.search(question)), default)


def question_kind(question: str) -> str:
    """ "multiple-choice", "short-extractive" or "open"."""
    return _first_cue(question, _KINDS, "open")


def answer_type(question: str) -> str:
    """ "location", "numeric" or "other"."""
    return _first_cue(question, _ANSWER_TYPES, "other")


def expected_type(question: str) -> str:
    """The kind of span an extractive answer looks for: percent, money, count, year, number or text."""
    return _first_cue(question, _EXPECT, "text")


# -- rule entities ----------------------------------------------------------------------------------------------------
# Types: money, percent, date, number, ref (table/figure/section references) and name (capitalized
# multi-word names and acronyms). The rules favour precision on the things questions ask about:
# amounts, shares, years and named things.
@dataclass
class Entity:
    """A typed entity on a page. ``type`` is one of name, number, date, money, percent, ref."""

    text: str
    type: str

    @property
    def tag(self) -> str:
        return f"{self.type}:{self.text}"


ENTITY_TYPES = ("name", "number", "date", "money", "percent", "ref")

_MONTHS = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
    r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_SCALE = r"(?:\s?(?:million|billion|trillion|thousand|bn|mn|[MBK])\b)?"
_ENTITY_RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "ref",
        re.compile(
            r"\b(?:Table|Figure|Fig\.|Chart|Exhibit|Section|Appendix|Slide)\s?[0-9]+[A-Za-z]?(?:\.[0-9]+)*\b"
        ),
    ),
    (
        "money",
        re.compile(
            r"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?" + _SCALE + r")|(?:\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|"
            r"dollars|euros|pounds)\b)|(?:\b(?:USD|EUR|GBP|US\$)\s?\d[\d,]*(?:\.\d+)?" + _SCALE + ")"
        ),
    ),
    ("percent", re.compile(r"\b\d+(?:\.\d+)?\s?(?:%|percent\b|per cent\b|pp\b)")),
    (
        "date",
        re.compile(
            r"\b(?:\d{1,2}\s"
            + _MONTHS
            + r",?\s\d{4}|"
            + _MONTHS
            + r"\s\d{1,2},?\s\d{4}|"
            + _MONTHS
            + r"\s\d{4}|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|(?:FY|Q[1-4]\s?)?(?:19|20)\d{2}"
            r"(?:\s?[-–/]\s?(?:19|20)?\d{2})?)\b"
        ),
    ),
    (
        "number",
        re.compile(
            r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w%])|(?<![\w.])\d+\.\d+(?![\w%])|"
            r"(?<![\w.,])\d{2,}(?![\w%.,])"
        ),
    ),
    (
        "name",
        re.compile(
            r"\b(?:[A-Z][a-zA-Z&'\-]+(?:\s(?:of|and|for|the|de|&)\s|\s)){1,4}[A-Z][a-zA-Z&'\-]+\b|"
            r"\b[A-Z]{2,6}s?\b|(?<=[a-z,;:]\s)[A-Z][a-z]{2,}(?:'s)?\b"
        ),
    ),
]
_NAME_STOP = {w.capitalize() for w in STOP_WORDS} | {
    "Table",
    "Figure",
    "Chart",
    "Page",
    "Section",
    "The",
    "This",
}


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(" .,;:")


def pattern_entities(text: str) -> list[Entity]:
    """All entities the rules find, in order; a span claimed by one rule is not typed again."""
    claimed: list[tuple[int, int]] = []
    found: list[tuple[int, Entity]] = []
    for type_, rx in _ENTITY_RULES:
        for m in rx.finditer(text):
            s, e = m.span()
            if any(s < ce and cs < e for cs, ce in claimed):
                continue
            value = _clean(m.group(0))
            if type_ == "name":
                value = re.sub(r"^(?:The|A|An|In|On|At|For|Of)\s", "", value)
            if type_ == "name" and (value in _NAME_STOP or len(value) < 2):
                continue
            if type_ == "number" and len(value.replace(",", "").split(".")[0]) < 2 and "." not in value:
                continue
            claimed.append((s, e))
            found.append((s, Entity(value, type_)))
    found.sort(key=lambda x: x[0])
    return [e for _, e in found]


_QUOTED = re.compile(r"[\"“”']([^\"“”']{2,60})[\"“”']")


def query_entities(question: str) -> list[str]:
    """Pattern entities and quoted phrases of the question, de-duplicated in order."""
    found = [e.text for e in pattern_entities(question)] + [
        m.group(1).strip() for m in _QUOTED.finditer(question)
    ]
    first: dict[str, str] = {}
    for e in found:
        first.setdefault(e.lower(), e)
    return list(first.values())


# -- questions ---------------------------------------------------------------------------------------------------------
_INSTRUCTION = re.compile(
    r"^(please\b|write\b|give me\b|give the\b|answer\b|directly answer\b|return\b|your answer\b|the answer\b|"
    r"the output\b|format\b|represent\b|save your answer\b|enumerate (?:all of them|each)\b|round\b|"
    r"note that\b|e\.g\.|for example\b|only\b|list the (?:page )?numbers? in\b)",
    re.I,
)
_TAIL = re.compile(r"[,;]?\s*(?:\(|\b)(?:e\.g\.|for example|such as \[|like \[)[^?]*$", re.I)


def clean_question(q: str) -> str:
    """The question without trailing instructions about the answer's form ("Please write the answer in float
    format", "Give me an integer", "(for example, ...)"): they are not words the pages hold."""
    q = re.sub(r"\s+", " ", q).strip()
    q = re.sub(r"\s*\((?:e\.g\.|for example)[^()]*\)", "", q, flags=re.I)  # "(for example, ...)" asides
    parts = re.split(r"(?<=[?!])(?![?!.\"'”’)])\s*(?=\S)|(?<=\.)\s+", q)
    while len(parts) > 1 and _INSTRUCTION.match(parts[-1]):
        parts.pop()
    out = " ".join(parts)
    m = _TAIL.search(out)
    if m and m.start() >= 8:
        out = out[: m.start()].rstrip(" ,;")
    out = re.sub(r"\s*\((?:give|write|answer|return)[^)]*\)\s*$", "", out, flags=re.I)
    return out.strip()
