"""The options `trident eval qa` and `trident eval retrieval` share: the index, the dataset and its
adapter (read from the dataset-adapter registry), the candidate pool."""

from __future__ import annotations

import typer

from trident_local.cli.common import registry_choice
from trident_local.evaluate.datasets import adapter_names

DatasetAdapter = registry_choice("DatasetAdapter", adapter_names())

INDEX = typer.Option(..., "--index", "-i", help="Index holding the dataset's documents.")
DATASET = typer.Option(..., help="MMLongBench-Doc samples JSON (doc_id = PDF file name).")
ADAPTER = typer.Option("mmlongbench", help="Dataset adapter that reads --dataset.")
POOL = typer.Option("fused", help="bm25 | dense | fused | rrf | colpali | xkg")
WORKERS = typer.Option(
    2,
    min=1,
    help="With --ray: question workers (Ray actors, each with its own models; "
    "one per GPU instead for a local GPU chat model); with --ray local also "
    "the cluster's CPUs.",
)
RAY = typer.Option(
    None,
    "--ray",
    metavar="ADDRESS",
    help="Answer the questions in shards on Ray: a cluster address (ray://host:10001, auto) or "
    "'local' (needs the \\[ray] extra); same rows, in the same order, as without it.",
)
