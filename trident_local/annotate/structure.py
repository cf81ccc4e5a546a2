"""Structural concepts: the leaf sections of the section tree, with their pages.

A page's section path is the deepest heading in force on it, so grouping pages
by their full path gives the leaves as the pages see them. A page's weight in a
section is 1 / (pages of the section). The section is embedded through a short
summary: its path plus the opening words of its text (extractive, no model).
"""

from __future__ import annotations

from dataclasses import dataclass

from trident_local.docs.model import Document

SUMMARY_CHARS = 400


@dataclass
class Section:
    path: list[str]
    pages: list[int]
    summary: str

    @property
    def name(self) -> str:
        return self.path[-1] if self.path else ""


def leaf_sections(doc: Document) -> list[Section]:
    """Leaf sections in reading order; pages without any section path belong to none."""
    order: list[tuple[str, ...]] = []
    pages: dict[tuple[str, ...], list[int]] = {}
    for p in doc.pages:
        key = tuple(p.section_path)
        if not key:
            continue
        if key not in pages:
            order.append(key)
            pages[key] = []
        pages[key].append(p.number)
    out = []
    for key in order:
        first = doc.page(pages[key][0])
        lead = " ".join(first.text.split())
        title = key[-1]
        if lead.startswith(title):
            lead = lead[len(title) :].lstrip(" .:")
        out.append(Section(list(key), pages[key], f"{' > '.join(key)}. {lead[:SUMMARY_CHARS]}"))
    return out


def section_weights(section: Section) -> dict[int, float]:
    return {p: 1.0 / len(section.pages) for p in section.pages}
