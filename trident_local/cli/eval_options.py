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
POOL = typer.Option("rrf", help="bm25 | dense | rrf | colpali | xkg")
