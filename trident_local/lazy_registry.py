"""A name -> "module:attr" registry whose targets are imported on first use.

Pools, model backends, rerankers, answer strategies and dataset adapters register
here; a target that needs a chat model names (``no_model``) the one that stands in
for it when a run has none, so callers never branch on ``chat is None``.
"""

from __future__ import annotations

import importlib
from typing import Any

from trident_local.errors import TridentError


class LazyRegistry:
    def __init__(self, kind: str, plural: str, targets: dict[str, str]):
        self.kind, self.plural = kind, plural  # for messages: "reranker", "rerankers"
        self._targets = dict(targets)

    def names(self) -> list[str]:
        return list(self._targets)

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def register(self, name: str, target: str) -> None:
        """Add ``name`` as a lazy "module:attr" target (a later registration replaces an earlier one)."""
        self._targets[name] = target

    def unregister(self, name: str) -> None:
        self._targets.pop(name, None)

    def load(self, name: str) -> Any:
        """The registered object (a class), imported now."""
        if name not in self._targets:
            raise TridentError(f"unknown {self.kind} {name!r}; {self.plural}: {', '.join(self._targets)}")
        module, attr = self._targets[name].split(":")
        return getattr(importlib.import_module(module), attr)

    def build(self, name: str, chat: Any = None) -> Any:
        """An instance of ``name``, or of its ``no_model`` stand-in when it needs a model and ``chat`` is None."""
        cls = self.load(name)
        if cls.needs_model and chat is None:
            if cls.no_model is None:
                raise TridentError(f"the {name!r} {self.kind} needs a chat model and has no no-model strategy")
            return self.build(cls.no_model, chat)
        return cls()
