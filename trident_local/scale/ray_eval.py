"""`trident eval qa|retrieval --ray`: question shards on Ray actors that read the index.

    driver: load the dataset, split the questions into contiguous shards
      Ray Data actors (``--workers`` on CPUs, or one per GPU for a local GPU chat model;
      ``ray_runtime.map_on_actors``, as indexing and annotation use): each opens the index (it
      only reads it) with its own `Models`, loaded once, and runs the same per-question code as
      the single-process run on each shard it is given
    driver: each shard's rows handed on as it comes back (a resumable run file appends them),
      then all of them gathered in the original question order, the same summary computed over them

``make_worker(index)`` (a picklable module-level function, or a ``functools.partial`` of one)
returns the function an actor applies to a shard: ``records -> per-question results``.
"""

from __future__ import annotations

import math
import os
import pickle
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from trident_local.errors import TridentError

if TYPE_CHECKING:
    from trident_local.index import Index

SHARDS_PER_ACTOR = 4  # several shards per actor: a slow shard does not leave the others idle


class _ShardWorker:
    """Ray Data actor: one read-only index handle and one model runtime for all the shards it runs.
    Shards and results travel pickled (question records and result rows are dataclasses)."""

    def __init__(self, root: str, make_worker: Callable[[Any], Callable[[list], list]]):
        from trident_local.index import Index

        self.work = make_worker(Index.open(root))
        self.name = f"{socket.gethostname()}:{os.getpid()}"

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        """The shard's results, an error message or "" (a configuration problem, such as a missing
        model: the driver stops), and this actor's runtime report."""
        from trident_local.models.runtime import runtime_report

        try:
            results, error = self.work(pickle.loads(row["records"])), ""
        except TridentError as e:
            results, error = [], str(e)
        return {"i": row["i"], "results": pickle.dumps(results), "error": error, "actor": self.name,
                "runtime": pickle.dumps(runtime_report())}


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
    from trident_local.scale.ray_runtime import actor_count, actor_gpus, connect, import_ray, map_on_actors

    import_ray()  # without the extra: a clear error even when there is nothing to run
    if not records:
        return [], []

    ray, started = connect(address, num_cpus=workers)
    try:
        gpus = actor_gpus(ray, chat_profile)
        n_actors = min(actor_count(ray, workers, gpus), len(records))
        parts = shards(records, n_actors * SHARDS_PER_ACTOR)
        rows = [{"i": i, "records": pickle.dumps(part)} for i, part in enumerate(parts)]
        root = str(index.store.root.resolve())
        done: list[list | None] = [None] * len(parts)
        reports: dict[str, dict[str, Any]] = {}
        for out in map_on_actors(ray, rows, _ShardWorker, {"root": root, "make_worker": make_worker},
                                 actors=n_actors, gpus_each=gpus):
            if out["error"]:
                raise TridentError(out["error"])
            i = int(out["i"])
            done[i] = pickle.loads(out["results"])
            reports[out["actor"]] = pickle.loads(out["runtime"])  # the latest: counts only grow
            if on_shard:
                on_shard(done[i])
            for _ in parts[i]:
                if on_step:
                    on_step()
        lost = [i for i, d in enumerate(done) if d is None]
        if lost:
            raise TridentError(f"a Ray worker died while answering questions ({len(lost)} of {len(parts)} "
                               "shards never came back); the rows already written are kept")
        return [x for rows_i in done for x in rows_i or []], list(reports.values())
    finally:
        if started:
            ray.shutdown()
