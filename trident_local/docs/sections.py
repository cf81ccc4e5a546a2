"""Section paths per page: from the PDF outline when it has one, else from heading detection.

Heading detection: the body font size is the character-weighted mode over the
document; a heading is a short block set larger than the body (or bold and
numbered like "3.2 Results"). Distinct heading sizes, largest first, give levels.
"""

from __future__ import annotations

import re
from collections import Counter

from trident_local.docs.model import Page, TocEntry

_NUMBERED = re.compile(r"^(\d+(\.\d+)*|[IVX]+\.|[A-Z]\.)\s+\S")
_MAX_HEADING_WORDS = 14


def body_font_size(pages: list[Page]) -> float:
    sizes: Counter[float] = Counter()
    for p in pages:
        for b in p.blocks:
            sizes[round(b.font_size, 1)] += len(b.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _is_heading(text: str, size: float, bold: bool, body: float) -> bool:
    words = text.split()
    if not words or len(words) > _MAX_HEADING_WORDS or text.endswith((".", ",", ";")) and not _NUMBERED.match(text):
        return False
    if not any(c.isalpha() for c in text):
        return False
    if size >= body * 1.15:
        return True
    return bold and size >= body * 0.95 and bool(_NUMBERED.match(text))


def paths_from_toc(toc: list[TocEntry], n_pages: int) -> list[list[str]]:
    """For each page, the outline path in force at the top of that page (entries starting on it included)."""
    by_page: dict[int, list[TocEntry]] = {}
    for e in toc:
        if 1 <= e.page <= n_pages:
            by_page.setdefault(e.page, []).append(e)
    stack: list[tuple[int, str]] = []
    out: list[list[str]] = []
    for page in range(1, n_pages + 1):
        for e in by_page.get(page, []):
            while stack and stack[-1][0] >= e.level:
                stack.pop()
            stack.append((e.level, e.title.strip()))
        out.append([t for _, t in stack])
    return out


def paths_from_headings(pages: list[Page]) -> list[list[str]]:
    body = body_font_size(pages)
    candidates = [
        (p.number, b.text.strip(), round(b.font_size, 1))
        for p in pages
        for b in p.blocks
        if not b.rotated and _is_heading(b.text.strip(), b.font_size, b.bold, body)
    ]
    levels = {s: i + 1 for i, s in enumerate(sorted({s for _, _, s in candidates}, reverse=True)[:4])}
    by_page: dict[int, list[tuple[int, str]]] = {}
    for page, text, size in candidates:
        by_page.setdefault(page, []).append((levels.get(size, 4), text[:120]))
    stack: list[tuple[int, str]] = []
    out: list[list[str]] = []
    for p in pages:
        for level, text in by_page.get(p.number, []):
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
        out.append([t for _, t in stack])
    return out


def assign_section_paths(pages: list[Page], toc: list[TocEntry]) -> None:
    """Set ``page.section_path`` on every page, preferring the outline."""
    paths = paths_from_toc(toc, len(pages)) if toc else paths_from_headings(pages)
    for p, path in zip(pages, paths, strict=True):
        p.section_path = path


_HEAD_ZONE = 0.35  # a page heading sits in the top third of the page
_MAX_PAGE_HEADINGS = 4


def page_headings(page: Page) -> list[str]:
    """The headings printed at the top of ``page``: short blocks set bold or larger than the page's median
    size. Unlike section paths (the outline, or sizes over the whole document) this catches a statement
    title set bold at body size, as "Consolidated Balance Sheets" is in a 10-K."""
    if not page.blocks:
        return []
    sizes = sorted(b.font_size for b in page.blocks)
    median = sizes[len(sizes) // 2]
    out = []
    for b in page.blocks:
        text = " ".join(b.text.split())
        if (not text or b.rotated or len(text.split()) > 12 or not re.search(r"[A-Za-z]{3}", text)
                or b.bbox[1] > page.height * _HEAD_ZONE):
            continue
        if b.bold or b.font_size >= median * 1.15:
            out.append(text)
    return out[:_MAX_PAGE_HEADINGS]
