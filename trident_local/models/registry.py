"""Build a backend for a role from a name. Backends are imported only when built.

``register`` is used by backend modules; ``build`` by stages. A backend whose
optional dependency is missing raises a clear error naming what to install.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trident_local.errors import TridentError
from trident_local.lazy_registry import LazyRegistry

ROLES = ("chat", "embedder", "sparse", "multivector", "ocr")


def _backends(role: str, targets: dict[str, str]) -> LazyRegistry:
    return LazyRegistry(f"{role} backend", f"{role} backends", targets)


# role -> backend name -> "module:attribute" of a factory taking (**options).
_LAZY: dict[str, LazyRegistry] = {
    "chat": _backends("chat", {
        "vllm": "trident_local.models.backends.vllm_chat:VLLMChat",
        "vllm-async": "trident_local.models.backends.vllm_async:VLLMAsyncChat",
        "openai": "trident_local.models.backends.openai_chat:OpenAIChat",
        "transformers": "trident_local.models.backends.hf_chat:TransformersChat",
    }),
    "embedder": _backends("embedder", {
        "sentence-transformers": "trident_local.models.backends.st_embedder:SentenceTransformerEmbedder",
        "bge-m3": "trident_local.models.backends.bge_m3:BGEM3Encoder",
    }),
    "sparse": _backends("sparse", {"bge-m3": "trident_local.models.backends.bge_m3:BGEM3Encoder"}),
    "multivector": _backends("multivector", {
        "colpali": "trident_local.models.backends.colpali_embedder:ColPaliEmbedder",
    }),
    "ocr": _backends("ocr", {"tesseract": "trident_local.models.backends.tesseract_ocr:TesseractOCR"}),
}
# (role, backend name) -> a registered callable, or a lazy target once imported
_FACTORIES: dict[tuple[str, str], Callable[..., Any]] = {}


def register(role: str, name: str, target: str | Callable[..., Any]) -> None:
    """Register a backend factory (a callable, or a lazy "module:attr" string)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    if isinstance(target, str):
        _LAZY[role].register(name, target)
    else:
        _FACTORIES[(role, name)] = target


def available(role: str | None = None) -> list[tuple[str, str]]:
    keys = {(r, n) for r, backends in _LAZY.items() for n in backends.names()} | set(_FACTORIES)
    return sorted(k for k in keys if role is None or k[0] == role)


def factory(role: str, name: str) -> Callable[..., Any]:
    key = (role, name)
    if key in _FACTORIES:
        return _FACTORIES[key]
    if name not in _LAZY.get(role, ()):
        names = ", ".join(n for r, n in available(role)) or "none"
        raise TridentError(f"no {role} backend named {name!r}; available: {names}")
    try:
        obj = _LAZY[role].load(name)
    except ImportError as e:  # an optional dependency is missing
        raise TridentError(f"{role} backend {name!r} needs a package that is not installed: {e}") from e
    _FACTORIES[key] = obj
    return obj


def build(role: str, name: str, **options: Any) -> Any:
    """Build the ``role`` backend called ``name`` with backend-specific options."""
    return factory(role, name)(**options)
