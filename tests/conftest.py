"""Shared test set-up: offline model hubs, small generated PDFs."""

from __future__ import annotations

import os
from collections.abc import Iterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """GPU tests skip cleanly where CUDA is absent, even when selected with -m gpu."""
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray with 2 CPUs for the module's tests (skipped without the [ray] extra)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(autouse=True)
def _fresh_model_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty process model cache: runtimes made without a cache share it
    (models/runtime.py, ``default_cache``), and a model one test built is not another test's."""
    from trident_local.models import runtime

    monkeypatch.setattr(runtime, "_DEFAULT_CACHE", None)


@pytest.fixture(scope="session", autouse=True)
def _asks_in_threads() -> Iterator[None]:
    """Apps built in the test process run no-model asks in threads (``ask_workers = -1`` would start a
    worker process per core for each app); a test of the worker processes sets ``ask_workers`` itself,
    and `trident serve` in a subprocess keeps the default. Session-wide, so module fixtures see it too."""
    from trident_local.serve import workers

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(workers, "auto_workers", lambda slots: 0)
        yield
