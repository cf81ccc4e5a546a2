"""Retrieval pools. Each pool has four verbs: ``prepare`` (per-document features),
``build`` (the global structure), ``retrieve`` and ``load``; pools are built by name
through :func:`get_pool` so callers never import a pool module."""

from trident_local.retrieve.base import Hit, Pool, get_pool, pool_names

__all__ = ["Hit", "Pool", "get_pool", "pool_names"]
