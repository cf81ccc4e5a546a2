"""`trident annotate --ray`: the per-document annotation stage on Ray actors that hold the models.

    driver: plan (skip annotated documents), hold the writer lock
      Ray Data: one row per document -> actors (each opens the index and its own `Models`:
      the embedder, and the chat/VLM profile if any, loaded once per actor) run the same
      annotation stage as `trident annotate` (`annotate.annotate_one`), which writes
      docs/<doc_id>/annotation*.{json,npy} atomically
    driver: marks each finished document in the manifest (the commit point) as results arrive;
      the global xkg pool is rebuilt once at the end by the caller

The index directory has to be on a filesystem every node sees. A document that fails (or
crashes its actor) fails only itself; a configuration error (a missing model) stops the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from trident_local.annotate import AnnotateReport, annotate_index, annotate_one, annotation_stage
from trident_local.errors import TridentError

if TYPE_CHECKING:
    from trident_local.annotate import DocResult
    from trident_local.index import Index
    from trident_local.store.stages import Stage


class _Annotate:
    """Ray actor: one index handle and one model runtime, reused for every document it gets."""

    def __init__(self, root: str, profile: str):
        from trident_local.index import Index

        self.index = Index.open(root)
        self.stage = annotation_stage(self.index, profile)

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        try:
            _, error, seconds, calls = annotate_one(self.index.store, self.stage, row["doc_id"])
        except TridentError as e:  # a configuration problem: the driver stops the run
            return dict(row, error=str(e), fatal=True, seconds=0.0, calls="")
        return dict(row, error=error, fatal=False, seconds=seconds, calls=json.dumps(calls) if calls else "")


def annotate_with_ray(
    index: Index,
    *,
    address: str = "local",
    workers: int = 2,
    profile: str | None = None,
    force: bool = False,
    docs: list[str] | None = None,
    on_doc: Callable[[str, int, float], None] | None = None,
) -> AnnotateReport:
    """:func:`~trident_local.annotate.annotate_index` with the documents annotated on Ray actors that
    hold the models (``workers`` CPU actors, or one per GPU for a GPU chat model) at ``address`` (or
    "local"); this process plans, marks each finished document and holds the writer lock throughout."""
    from trident_local.scale.ray_runtime import import_ray

    import_ray()  # without the extra: a clear error before anything is done

    def on_ray(stage: Stage, todo: list[str]) -> Iterator[DocResult]:
        return annotate_on_ray(index, todo, profile=stage.run.profile, address=address, workers=workers)

    return annotate_index(index, profile=profile, force=force, docs=docs, on_doc=on_doc, annotate_docs=on_ray)


def annotate_on_ray(
    index: Index, doc_ids: list[str], *, profile: str, address: str = "local", workers: int = 2
) -> Iterator[DocResult]:
    """Annotate ``doc_ids`` on Ray; yields per-document results as they finish (the caller marks them)."""
    if not doc_ids:
        return
    from trident_local.scale.ray_runtime import actor_count, actor_gpus, connect, map_on_actors

    ray, started = connect(address, num_cpus=workers)
    try:
        gpus = actor_gpus(ray, profile)
        rows = [{"doc_id": d} for d in doc_ids]
        seen: set[str] = set()
        for row in map_on_actors(
            ray,
            rows,
            _Annotate,
            {"root": str(index.store.root.resolve()), "profile": profile},
            actors=actor_count(ray, workers, gpus),
            gpus_each=gpus,
        ):
            if row["fatal"]:
                raise TridentError(row["error"])
            seen.add(row["doc_id"])
            yield row["doc_id"], row["error"], float(row["seconds"]), json.loads(row["calls"] or "null")
        for d in doc_ids:
            if d not in seen:
                name = index.store.manifest.documents[d].file_name
                yield d, f"{name}: the worker annotating this document crashed", 0.0, None
    finally:
        if started:
            ray.shutdown()
