"""Indexing on a Ray cluster: the same per-document stages as `Index.add`, scheduled by Ray Data."""
