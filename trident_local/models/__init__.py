"""Model roles behind small protocols, and a registry that builds a backend by name.

Stages depend on :mod:`trident_local.models.protocols` and
:func:`trident_local.models.registry.build` only; backend modules are imported
lazily by the registry, so importing a stage never imports torch, vllm or an
HTTP client it does not use.
"""
