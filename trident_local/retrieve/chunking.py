"""Split page text into overlapping word windows, so a small-context embedder sees all of a page."""

from __future__ import annotations


def windows(text: str, size: int, stride: int) -> list[str]:
    """Word windows of ``size`` words starting every ``stride`` words; the last one reaches the end."""
    words = text.split()
    if not words:
        return []
    if len(words) <= size:
        return [" ".join(words)]
    starts = list(range(0, len(words) - size + 1, stride))
    if starts[-1] + size < len(words):
        starts.append(len(words) - size)
    return [" ".join(words[s : s + size]) for s in starts]
