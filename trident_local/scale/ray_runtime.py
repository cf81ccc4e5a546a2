"""Connect to (or start) Ray; a clear error when the optional extra is missing."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
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
    env_vars = {
        k: v
        for k, v in os.environ.items()
        if k in ("PYTHONPATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") or k.startswith("TRIDENT_")
    }
    kwargs: dict[str, Any] = {"runtime_env": {"env_vars": env_vars}, "log_to_driver": False}
    if address == LOCAL:
        ray.init(num_cpus=num_cpus, include_dashboard=False, **kwargs)
    else:
        ray.init(address=address, **kwargs)
    return ray, True


def gpus_per_model(profile: Any) -> int:
    """GPUs one model of ``profile`` takes on a Ray worker: a local vLLM engine takes its
    ``tensor_parallel_size`` (1 by default), a local transformers model one; no model, a model
    served over HTTP (``openai``) and the CPU embedders take none."""
    from trident_local.models.profiles import ModelProfile, load_profile
    from trident_local.models.runtime import is_no_model

    if is_no_model(profile):
        return 0
    try:
        p = profile if isinstance(profile, ModelProfile) else load_profile(str(profile))
    except Exception:  # an unknown profile fails where it is built, with the profile's own error
        return 0
    if p.backend == "vllm":
        return int(p.engine_args.get("tensor_parallel_size", 1) or 1)
    return 1 if p.backend == "transformers" else 0


def actor_gpus(ray: Any, profile: Any) -> int:
    """GPUs to give each actor holding a model of ``profile``: none when the cluster has no GPU."""
    return gpus_per_model(profile) if ray.cluster_resources().get("GPU", 0) else 0


def actor_count(ray: Any, workers: int, gpus_each: int) -> int:
    """How many model actors: one per ``gpus_each`` GPUs of the cluster when the model takes GPUs
    (as `trident index --ray` does), else ``workers`` (CPU actors)."""
    if gpus_each:
        return max(1, int(ray.cluster_resources().get("GPU", 0)) // gpus_each)
    return max(1, workers)


def map_on_actors(
    ray: Any,
    rows: list[dict[str, Any]],
    actor_cls: type | None,
    ctor_kwargs: dict[str, Any],
    *,
    actors: int,
    gpus_each: int = 0,
    before: tuple[Callable[..., dict[str, Any]], dict[str, Any]] | None = None,
) -> Iterator[dict[str, Any]]:
    """``actor_cls(**ctor_kwargs)(row)`` for every row on a Ray Data pool of ``actors`` actors (each
    loads its models once), one row per block; output rows as they finish, in no set order.

    ``before``: ``(fn, kwargs)``, a CPU task run on each row first (indexing parses PDFs there, so
    the actors, one per GPU when there are GPUs, only run the models); with ``actor_cls`` None only
    that task runs. A row whose worker crashes (a segfault, an out-of-memory kill) is retried by
    Ray and then dropped (``DataContext.max_errored_blocks``): the caller reports the rows that
    never came back.
    """
    if not rows:
        return
    ctx = ray.data.DataContext.get_current()
    ctx.max_errored_blocks = len(rows)
    ctx.enable_progress_bars = False
    ds = ray.data.from_items(rows, override_num_blocks=len(rows))
    if before is not None:
        fn, kwargs = before
        ds = ds.map(fn, fn_kwargs=kwargs, num_cpus=1)
    if actor_cls is not None:
        ds = ds.map(
            actor_cls,
            fn_constructor_kwargs=ctor_kwargs,
            compute=ray.data.ActorPoolStrategy(size=max(1, min(actors, len(rows)))),
            num_cpus=1,
            num_gpus=gpus_each,
        )
    yield from ds.iter_rows()


def _apply(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


def ray_map(ray: Any, *, in_flight: int = 64) -> Callable[[Callable[[Any], Any], Iterable[Any]], Iterator[Any]]:
    """A ``map`` whose calls run as Ray tasks (one CPU each), for the ``map_fn`` hooks (e.g. a
    pool's per-document IVF assignment). Results come back in order, with at most ``in_flight``
    tasks queued so a long list streams; ``fn`` goes to the object store once (a partial holding
    centroids is not copied per task), each item with its task."""
    remote = ray.remote(num_cpus=1)(_apply)

    def map_fn(fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        fn_ref = ray.put(fn)
        pending: deque[Any] = deque()
        for item in items:
            pending.append(remote.remote(fn_ref, item))
            if len(pending) >= in_flight:
                yield ray.get(pending.popleft())
        while pending:
            yield ray.get(pending.popleft())

    return map_fn
