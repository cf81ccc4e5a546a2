"""The on-disk index: a manifest, per-document data files and pool indexes, written atomically."""
