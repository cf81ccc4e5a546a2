"""The options `trident eval qa` and `trident eval retrieval` share: the index, the dataset and its
adapter (read from the dataset-adapter registry), the candidate pool and the lead-page finders. Their
defaults are those of `trident search` and `trident ask` (:class:`AskOptions`), so an evaluation at its
defaults scores what a user runs."""

from __future__ import annotations

import typer

from trident_local.cli.common import registry_choice
from trident_local.cli.search_cmd import FINDERS_HELP, POOL_HELP
from trident_local.evaluate.datasets import adapter_names
from trident_local.generate.ask import AskOptions

ASK = AskOptions()  # the defaults of `trident ask`, the service and the Python API

DatasetAdapter = registry_choice("DatasetAdapter", adapter_names())

INDEX = typer.Option(..., "--index", "-i", help="Index holding the dataset's documents.")
DATASET = typer.Option(..., help="MMLongBench-Doc samples JSON (doc_id = PDF file name).")
ADAPTER = typer.Option("mmlongbench", help="Dataset adapter that reads --dataset.")
POOL = typer.Option(ASK.pool, help=POOL_HELP)
FINDERS = typer.Option(ASK.finders, help=FINDERS_HELP + " 'none' scores the pool alone.")
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
