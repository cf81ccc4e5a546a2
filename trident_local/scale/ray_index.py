"""`trident index --ray`: a Ray Data pipeline over the same per-document stages as `Index.add`.

    files -> [parse: CPU tasks, `docs.workers.parse_pdf`] -> [prepare: actors holding the models,
    the index's pool `prepare` stages, then the annotation with --annotate]
    -> driver: `store.write_document` + `store.mark`
    -> global pools built once at the end (`Index.build_pools`), all under the writer lock;
       their per-shard work (the colpali IVF's token assignment, one task per document) runs as
       Ray tasks.

Workers write per-document features (``dense.npy``, the annotation files) atomically into the index directory,
which therefore has to be on a filesystem every node sees; only the driver writes the manifest,
so a killed run leaves a valid index and a re-run skips the finished documents. A file that
fails (or crashes its task), in parsing or in any of its stages, fails only itself; a
configuration error (a missing model) stops the run, as in `Index.add`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from trident_local.docs.model import Document
from trident_local.docs.workers import parse_pdf
from trident_local.errors import IngestError, TridentError
from trident_local.index import AddReport, FileResult, Index, expand_paths
from trident_local.scale.ray_runtime import actor_count, actor_gpus, map_on_actors, ray_map
from trident_local.store.stages import StageRunner

log = logging.getLogger(__name__)


def _parse(row: dict[str, Any], *, root: str, ocr_profile: str) -> dict[str, Any]:
    """Ray task: the parsed document as JSON (or the stored one when ingestion already finished)."""
    from trident_local.store.index_store import IndexStore

    out = dict(row, doc_json="", error="", fatal=False)
    try:
        if row["resumed"]:
            doc = IndexStore.open(root).document(row["doc_id"])
        else:
            doc = parse_pdf(row["path"], row["doc_id"], ocr_profile)
        out["doc_json"] = json.dumps(doc.to_dict())
    except IngestError as e:
        out["error"] = str(e)
    except Exception as e:  # one bad document must not stop the batch
        out["error"] = f"{row['path']}: {type(e).__name__}: {e}"
    return out


class _Prepare:
    """Ray actor: holds the index's models (loaded once) and runs the per-document stages: its pools'
    ``prepare`` stages, then those of ``doc_stages`` it can build (the annotation, with the driver's
    chat profile), as `Index.add` does; it reports the names of the stages it finished."""

    def __init__(self, root: str, doc_stages: tuple[str, ...] = (), annotate_profile: str | None = None):
        from trident_local.annotate import STAGE, annotation_stage

        self.index = Index.open(root)
        if STAGE in doc_stages:  # models load once per actor, on first use
            self.index.doc_stages.append(annotation_stage(self.index, annotate_profile))
        self.stages = self.index.stages()

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        if row["error"]:
            return dict(row, prepared="")
        done = set(filter(None, row["done"].split(",")))
        prepared = []
        try:
            doc = Document.from_dict(json.loads(row["doc_json"]))
            for stage in self.stages:
                if stage.name not in done:
                    stage.ensure(doc)  # files saved by a run killed before marking are not redone
                    prepared.append(stage.name)
        except IngestError as e:
            return dict(row, prepared="", error=str(e))
        except TridentError as e:  # a configuration problem (a missing model): the driver stops the run
            return dict(row, prepared="", error=str(e), fatal=True)
        except Exception as e:  # one bad document must not stop the batch
            return dict(row, prepared="", error=f"{row['path']}: {type(e).__name__}: {e}")
        return dict(row, prepared=",".join(prepared))


def _plan(index: Index, files: list[Path], stage_names: list[str],
          finish: Callable[[FileResult], None]) -> list[dict[str, Any]]:
    """Rows for the files still to do; finished and unreadable ones are reported right away."""
    rows = []
    for path, doc_id in index.triage(files, stage_names, finish):
        entry = index.store.manifest.documents.get(doc_id)
        done = [s for s, ok in (entry.stages.items() if entry else []) if ok]
        rows.append({"path": str(path), "doc_id": doc_id, "resumed": "ingest" in done, "done": ",".join(done)})
    return rows


def add_with_ray(
    index: Index,
    paths: Iterable[str | Path],
    *,
    address: str = "local",
    workers: int = 2,
    on_file: Callable[[FileResult], None] | None = None,
) -> AddReport:
    """Index PDFs on Ray (``address``, or "local" for a local cluster of ``workers`` CPUs).

    Same result as :meth:`Index.add`: documents, pages, objects and pool contents. The annotation
    stage (``index.doc_stages``, added by ``trident index --annotate``) runs on the actors too,
    rebuilt there with the same chat profile, after the pool stages; the driver only writes the
    document and marks the stages the actor reports. Another extra stage, which an actor cannot
    rebuild from its name, runs in the driver.
    """
    from trident_local.scale.ray_runtime import connect

    ray, started = connect(address, num_cpus=workers)
    try:
        return _run(ray, index, paths, workers=workers, on_file=on_file)
    finally:
        if started:
            ray.shutdown()


def _run(ray: Any, index: Index, paths: Iterable[str | Path], *, workers: int,
         on_file: Callable[[FileResult], None] | None) -> AddReport:
    t0 = time.perf_counter()
    report = AddReport()
    files = expand_paths(paths)
    pool_stages = index.stages()[: len(index.stages()) - len(index.doc_stages)]
    stage_names = ["ingest", *[s.name for s in index.stages()]]

    def finish(res: FileResult) -> None:
        report.files.append(res)
        if on_file:
            on_file(res)

    root = str(index.store.root.resolve())
    with index.store.writer_lock():
        rows = _plan(index, files, stage_names, finish)
        if rows:
            prepare_kwargs = _prepare_kwargs(index, root)
            gpus_each = _prepare_gpus(ray, prepare_kwargs)
            actors = actor_count(ray, workers, gpus_each)
            # Parsing runs as CPU tasks (a task that crashes, a MuPDF segfault, fails only its file);
            # the actors (one per GPU, or per GPU share of the annotation's chat model) run the models.
            parse = (_parse, {"root": root, "ocr_profile": index.config.ocr})
            staged = bool(pool_stages or index.doc_stages)
            out = map_on_actors(ray, rows, _Prepare if staged else None, prepare_kwargs, actors=actors,
                                gpus_each=gpus_each, before=parse)
            seen: set[str] = set()
            for row in out:
                seen.add(row["doc_id"])
                _record(index, {"prepared": "", **row}, finish)
            for row in rows:
                if row["doc_id"] not in seen:
                    finish(FileResult(row["path"], "failed", row["doc_id"],
                                      error=f"{row['path']}: the worker processing this file crashed"))
        index.build_pools(map_fn=ray_map(ray))
    report.seconds = time.perf_counter() - t0
    return report


def _prepare_kwargs(index: Index, root: str) -> dict[str, Any]:
    """`_Prepare`'s arguments: the extra stages by name, and the annotation's chat profile (the
    driver's, which may differ from the index's default)."""
    from trident_local.annotate import STAGE

    profile = next((getattr(s.run, "profile", None) for s in index.doc_stages if s.name == STAGE), None)
    return {"root": root, "doc_stages": tuple(s.name for s in index.doc_stages),
            "annotate_profile": None if profile is None else str(profile)}


def _prepare_gpus(ray: Any, prepare_kwargs: dict[str, Any]) -> int:
    """GPUs each prepare actor takes: none on a cluster without GPUs, else one (the embedder), or
    more when the annotation's chat model needs more (a vLLM engine's ``tensor_parallel_size``)."""
    from trident_local.annotate import STAGE

    if not ray.cluster_resources().get("GPU", 0):
        return 0
    profile = prepare_kwargs["annotate_profile"]
    chat = actor_gpus(ray, profile) if STAGE in prepare_kwargs["doc_stages"] and profile is not None else 0
    return max(1, chat)


def _record(index: Index, row: dict[str, Any], finish: Callable[[FileResult], None]) -> None:
    """Driver side: register the document and the stages the actor finished in the manifest, then run
    any extra per-document stage the actor did not (none with --annotate: the actors annotate)."""
    path, doc_id = row["path"], row["doc_id"]
    if row.get("fatal"):
        raise TridentError(row["error"])
    if row["error"]:
        finish(FileResult(path, "failed", doc_id, error=row["error"]))
        return
    doc = Document.from_dict(json.loads(row["doc_json"]))
    t1 = time.perf_counter()
    try:
        if not row["resumed"]:
            index.store.write_document(doc)
        for name in filter(None, row["prepared"].split(",")):
            index.store.mark(doc_id, name)
        StageRunner(index.store, index.doc_stages).run(doc)  # those no actor ran
    except TridentError:
        raise
    except Exception as e:
        log.exception("indexing %s failed", path)
        finish(FileResult(path, "failed", doc_id, error=f"{path}: {type(e).__name__}: {e}"))
        return
    finish(FileResult(path, "resumed" if row["resumed"] else "indexed", doc_id, doc.n_pages,
                      time.perf_counter() - t1))
