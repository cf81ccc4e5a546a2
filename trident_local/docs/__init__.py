"""PDF ingestion: pages, text blocks, section paths, typed evidence objects, rendering, OCR."""

from trident_local.docs.model import Document, EvidenceObject, Page, TextBlock, TocEntry

__all__ = ["Document", "EvidenceObject", "Page", "TextBlock", "TocEntry"]
