"""trident_local: question answering over long PDFs with local models and checkable page citations.

The short API::

    from trident_local import Index
    index = Index.open("my-index")
    hits = index.search("What was the revenue in 2020?", pool="fused", k=5)
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Index", "__version__"]


def __getattr__(name: str):  # lazy: keep `import trident_local` cheap
    if name == "Index":
        from trident_local.index import Index

        return Index
    raise AttributeError(name)
