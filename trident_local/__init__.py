"""trident_local: question answering over long PDFs with local models and checkable page citations.

The short API::

    from trident_local import Index, ask, search
    index = Index.open("my-index")
    pages = search(index, "What was the revenue in 2020?", k=5)   # ranked pages with their regions
    result = ask(index, "What was the revenue in 2020?")           # the answer, citing pages
"""

from __future__ import annotations

__version__ = "0.1.0"

# Imported now, not lazily: importing the submodule `trident_local.search` binds the package attribute
# `search` to the module, which would shadow a lazily resolved function of the same name.
from trident_local.search import search  # noqa: E402

__all__ = ["AskOptions", "Index", "__version__", "ask", "search"]

_LAZY = {  # name -> module: heavier imports wait for first use
    "Index": "trident_local.index",
    "ask": "trident_local.generate.ask",
    "AskOptions": "trident_local.generate.ask",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
