"""`Index` built on a local Ray cluster equals the single-process index of the same files:
documents, pages, objects, dense vectors and search results; a corrupt PDF fails only itself,
and a re-run skips the finished documents."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from pdf_factory import corrupt_pdf, rich_pdf

from trident_local.errors import TridentError
from trident_local.index import Index

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
QUERIES = ["revenue growth in 2023", "sparse retrieval of pages", "solar panel output", "wind turbines"]


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _corpus(d: Path) -> Path:
    d.mkdir()
    for p in SAMPLES.glob("*.pdf"):
        shutil.copy(p, d / p.name)
    rich_pdf(d / "solar.pdf", topic="solar", pages=3)
    rich_pdf(d / "wind.pdf", topic="wind", pages=2)
    corrupt_pdf(d / "broken.pdf")
    return d


def _docs(idx: Index) -> dict[str, dict]:
    out = {}
    for doc in idx.documents():
        d = doc.to_dict()
        d.pop("path", None)
        out[doc.doc_id] = d
    return out


def test_ray_index_equals_single_process(tmp_path: Path, ray_local) -> None:
    from trident_local.scale.ray_index import add_with_ray

    corpus = _corpus(tmp_path / "pdfs")
    single = Index.create(tmp_path / "single")
    rep1 = single.add([corpus], workers=1)
    distributed = Index.create(tmp_path / "ray")
    rep2 = add_with_ray(distributed, [corpus], address="auto", workers=2)

    status = lambda rep: sorted((Path(f.path).name, f.status, f.pages) for f in rep.files)  # noqa: E731
    assert status(rep1) == status(rep2)
    failed = [f for f in rep2.files if f.status == "failed"]
    assert [Path(f.path).name for f in failed] == ["broken.pdf"] and "broken.pdf" in failed[0].error
    assert len(rep2.files) == 5 and rep2.pages_indexed == rep1.pages_indexed > 0

    assert _docs(single) == _docs(distributed)  # pages, blocks, sections, objects
    for doc_id in single.store.doc_ids():
        a = single.store.manifest.documents[doc_id].stages
        b = distributed.store.manifest.documents[doc_id].stages
        assert a == b == {"ingest": True, "dense": True}
        va = np.load(single.store.doc_dir(doc_id) / "dense.npy").astype(np.float32)
        vb = np.load(distributed.store.doc_dir(doc_id) / "dense.npy").astype(np.float32)
        assert va.shape == vb.shape and np.abs(va - vb).max() < 2e-3
    for pool in ("bm25", "dense", "rrf"):
        for q in QUERIES:
            ha = single.search(q, pool=pool, k=5)
            hb = distributed.search(q, pool=pool, k=5)
            assert [h.key for h in ha] == [h.key for h in hb], (pool, q)
            assert np.allclose([h.score for h in ha], [h.score for h in hb], atol=2e-3)

    again = add_with_ray(Index.open(tmp_path / "ray"), [corpus], address="auto", workers=2)
    assert sorted(f.status for f in again.files) == ["failed", "skipped", "skipped", "skipped", "skipped"]


def test_ray_missing_gives_a_clear_error(monkeypatch) -> None:
    import builtins

    from trident_local.scale import ray_runtime

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(TridentError, match=r"trident-local\[ray\]"):
        ray_runtime.import_ray()
