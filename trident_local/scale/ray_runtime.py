"""Connect to (or start) Ray; a clear error when the optional extra is missing."""

from __future__ import annotations

import os
from typing import Any

from trident_local.errors import TridentError

LOCAL = "local"


def import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise TridentError(
            "--ray needs Ray: pip install 'trident-local[ray]' (or: pip install 'ray[data]')"
        ) from None
    return ray


def connect(address: str, *, num_cpus: int | None = None) -> tuple[Any, bool]:
    """``ray`` connected to ``address``; "local" starts a private local cluster with ``num_cpus``.

    Returns (ray, started_here): a cluster started here is shut down by whoever started it.
    An already initialised Ray (a test, a notebook) is used as it is.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    # Workers inherit this environment (PYTHONPATH, HF_HUB_OFFLINE, the models folder).
    env_vars = {k: v for k, v in os.environ.items()
                if k in ("PYTHONPATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") or k.startswith("TRIDENT_")}
    kwargs: dict[str, Any] = {"runtime_env": {"env_vars": env_vars}, "log_to_driver": False}
    if address == LOCAL:
        ray.init(num_cpus=num_cpus, include_dashboard=False, **kwargs)
    else:
        ray.init(address=address, **kwargs)
    return ray, True
