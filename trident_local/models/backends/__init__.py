"""Backend implementations; imported lazily through the registry."""
