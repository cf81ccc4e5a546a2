"""Regions: the box on a page that carries a piece of evidence (a table cell with its headers, a row,
a line of text), for search hits, answer citations and grounding evaluation."""

from trident_local.regions.attach import citation_regions, located_text, search_regions
from trident_local.regions.layout import PageLayout, Region, page_layout
from trident_local.regions.locate import answer_regions, question_regions, value_regions

__all__ = ["PageLayout", "Region", "answer_regions", "citation_regions", "located_text", "page_layout",
           "question_regions", "search_regions", "value_regions"]
