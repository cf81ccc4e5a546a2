"""`trident eval qa|retrieval --ray`: question shards on Ray actors that read the index.

    driver: load the dataset, split the questions into contiguous shards
      Ray actors (``--workers`` on CPUs, or one per GPU for a local GPU chat model): each opens
      the index (it only reads it) with its own `Models`, loaded once, and runs the same
      per-question code as the single-process run on each shard it is given
    driver: each shard's rows handed on as it comes back (a resumable run file appends them),
      then all of them gathered in the original question order, the same summary computed over them

``make_worker(index)`` (a picklable module-level function, or a ``functools.partial`` of one)
returns the function an actor applies to a shard: ``records -> per-question results``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from trident_local.errors import TridentError

if TYPE_CHECKING:
    from trident_local.index import Index

SHARDS_PER_ACTOR = 4  # several shards per actor: a slow shard does not leave the others idle


class _ShardWorker:
    """Ray actor: one read-only index handle and one model runtime for all the shards it runs."""

    def __init__(self, root: str, make_worker: Callable[[Any], Callable[[list], list]]):
        from trident_local.index import Index

        self.work = make_worker(Index.open(root))

    def run(self, i: int, records: list) -> tuple[int, list, str]:
        """(the shard's number, its results, an error message or "")."""
        try:
            return i, self.work(records), ""
        except TridentError as e:  # a configuration problem (a missing model): the driver stops
            return i, [], str(e)

    def runtime(self) -> dict[str, Any]:
        from trident_local.models.runtime import runtime_report

        return runtime_report()


def shards(items: Sequence, n: int) -> list[list]:
    """``items`` in ``n`` (or fewer) contiguous runs of nearly equal size, in order."""
    size = max(1, math.ceil(len(items) / max(1, n)))
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def run_sharded(
    index: Index,
    records: Sequence,
    make_worker: Callable[[Any], Callable[[list], list]],
    *,
    chat_profile: Any = None,
    address: str = "local",
    workers: int = 2,
    on_step: Callable[[], None] | None = None,
    on_shard: Callable[[list], None] | None = None,
) -> tuple[list, list[dict[str, Any]]]:
    """(the per-record results of all shards in record order, each actor's runtime report).

    ``chat_profile``: the chat model the workers build; a local GPU model gives each actor its GPUs.
    ``on_shard``: called with each shard's results as soon as it comes back, in any order, so
    what is finished is kept even if a later shard fails.
    """
    from trident_local.scale.ray_runtime import actor_count, actor_gpus, connect, import_ray

    import_ray()  # without the extra: a clear error even when there is nothing to run
    if not records:
        return [], []

    ray, started = connect(address, num_cpus=workers)
    try:
        gpus = actor_gpus(ray, chat_profile)
        n_actors = min(actor_count(ray, workers, gpus), len(records))
        parts = shards(records, n_actors * SHARDS_PER_ACTOR)
        Worker = ray.remote(num_cpus=1, num_gpus=gpus)(_ShardWorker)
        root = str(index.store.root.resolve())
        actors = [Worker.remote(root, make_worker) for _ in range(min(n_actors, len(parts)))]
        pool = ray.util.ActorPool(actors)
        done: list[list] = [[] for _ in parts]
        try:
            for i, rows, error in pool.map_unordered(lambda a, job: a.run.remote(*job), list(enumerate(parts))):
                if error:
                    raise TridentError(error)
                done[i] = rows
                if on_shard:
                    on_shard(rows)
                for _ in parts[i]:
                    if on_step:
                        on_step()
        except ray.exceptions.RayActorError as e:
            raise TridentError(f"a Ray worker died while answering questions: {e}") from None
        reports = ray.get([a.runtime.remote() for a in actors])
        return [x for rows in done for x in rows], reports
    finally:
        if started:
            ray.shutdown()
