"""On a local Ray cluster (2 CPUs, started once for the module), `trident index`, `trident annotate`
and `trident eval qa|retrieval` give what the single-process runs give on the same files:

- the index: documents, pages, objects, dense vectors and search results; a corrupt PDF fails
  only itself, and a re-run skips the finished documents;
- the annotation: the same files, records and no-model rerank results; a document that cannot
  be read fails only itself, and a re-run skips the annotated ones;
- the evaluations: the same per-question rows, in the same order, and the same summary JSON;
- without Ray, every `--ray` path stops with a clear error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from pdf_factory import corrupt_pdf, rich_pdf

from trident_local.annotate import STAGE, AnnotateReport, annotate_index, cache, load
from trident_local.errors import TridentError
from trident_local.index import Index
from trident_local.rerank import rerank_pool
from trident_local.scale.ray_annotate import annotate_with_ray
from trident_local.store.stages import Stage

pytestmark = pytest.mark.integration

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
QUERIES = ["revenue growth in 2023", "sparse retrieval of pages", "solar panel output", "wind turbines"]


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


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, ray_local) -> tuple[Path, Path, Index, object]:
    """(work folder, the PDFs, their single-process index, its add report): shared by the tests."""
    tmp_path = tmp_path_factory.mktemp("scale")
    corpus = _corpus(tmp_path / "pdfs")
    single = Index.create(tmp_path / "single")
    return tmp_path, corpus, single, single.add([corpus], workers=1)


def test_ray_index_equals_single_process(built, ray_local) -> None:
    from trident_local.scale.ray_index import add_with_ray

    tmp_path, corpus, single, rep1 = built
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


# -- annotate --ray ---------------------------------------------------------------------------------
def _annotation_files(idx: Index, doc_id: str) -> tuple[dict, np.ndarray, np.ndarray]:
    js, cv, fv = cache.paths(idx.store, doc_id)
    data = json.loads(js.read_text())
    data["stats"].pop("seconds")  # wall time of the run
    return data, np.load(cv), np.load(fv)


@pytest.fixture(scope="module")
def annotated(built, ray_local) -> tuple[Index, AnnotateReport, Index, AnnotateReport]:
    """Two copies of the single-process index, annotated here and on Ray; in both, wind.pdf's
    document.json is corrupt, so that document cannot be annotated."""
    tmp_path, _, single, _ = built
    copies = []
    for name in ("annotated_single", "annotated_ray"):
        shutil.copytree(single.store.root, tmp_path / name)
        idx = Index.open(tmp_path / name)
        (idx.store.doc_dir(idx.resolve("wind.pdf")) / "document.json").write_text("{ not json")
        copies.append(idx)
    rep1 = annotate_index(copies[0])
    rep2 = annotate_with_ray(copies[1], address="auto", workers=2)
    return copies[0], rep1, copies[1], rep2


def test_ray_annotate_equals_single_process(annotated) -> None:
    single, rep1, distributed, rep2 = annotated
    bad = single.resolve("wind.pdf")
    good = sorted(rep1.annotated)
    assert len(good) == 3 and sorted(rep2.annotated) == good and rep1.pages == rep2.pages > 0
    assert [d for d, _ in rep1.failed] == [d for d, _ in rep2.failed] == [bad]  # fails only itself
    assert "JSONDecodeError" in rep2.failed[0][1]
    assert rep1.calls.keys() == rep2.calls.keys()

    for doc_id in single.store.doc_ids():  # the driver marked the finished documents
        a = single.store.manifest.documents[doc_id].stages
        assert a == distributed.store.manifest.documents[doc_id].stages
        assert a.get(STAGE, False) == (doc_id != bad)
    for doc_id in good:  # the same files, written by the actors
        ja, ca, fa = _annotation_files(single, doc_id)
        jb, cb, fb = _annotation_files(distributed, doc_id)
        assert ja == jb
        for va, vb in ((ca, cb), (fa, fb)):  # float rounding of the embedder differs between processes
            assert va.shape == vb.shape and np.abs(va.astype(np.float32) - vb.astype(np.float32)).max() < 2e-3
        la, lb = load(single.store, doc_id).annotation, load(distributed.store, doc_id).annotation
        assert la.pages == lb.pages and la.concepts == lb.concepts and la.pages  # the page records
    for q in QUERIES:  # the no-model reranker reads the records and vectors
        ra = rerank_pool(single, q, single.search(q, pool="bm25", doc=good, k=10))
        rb = rerank_pool(distributed, q, distributed.search(q, pool="bm25", doc=good, k=10))
        assert [h.key for h in ra.hits] == [h.key for h in rb.hits] and ra.hits, q
        assert (
            np.allclose([h.score for h in ra.hits], [h.score for h in rb.hits]) and ra.fallback == rb.fallback
        )

    again = annotate_with_ray(Index.open(distributed.store.root), address="auto", workers=2)
    assert again.annotated == [] and sorted(again.skipped) == good and [d for d, _ in again.failed] == [bad]


def test_ray_index_annotates_on_the_actors(built, annotated, tmp_path: Path) -> None:
    """`trident index --ray --annotate`: the actors that embed also annotate (the driver only marks),
    with the same annotation files as annotating in one process; a corrupt PDF fails only itself."""
    from trident_local.scale.ray_index import add_with_ray

    _, corpus, _, _ = built
    reference, rep1, _, _ = annotated
    idx = Index.create(tmp_path / "ray_annotated")
    ran_in_driver: list[str] = []
    idx.doc_stages.append(Stage(STAGE, lambda doc: ran_in_driver.append(doc.doc_id)))
    rep = add_with_ray(idx, [corpus], address="auto", workers=2)
    assert sorted(f.status for f in rep.files) == ["failed", "indexed", "indexed", "indexed", "indexed"]
    assert [Path(f.path).name for f in rep.files if f.status == "failed"] == ["broken.pdf"]
    assert ran_in_driver == []
    reopened = Index.open(idx.store.root)
    assert all(reopened.store.manifest.documents[d].stages.get(STAGE) for d in reopened.store.doc_ids())
    for doc_id in rep1.annotated:
        ja, ca, fa = _annotation_files(reference, doc_id)
        jb, cb, fb = _annotation_files(reopened, doc_id)
        assert ja == jb
        for va, vb in ((ca, cb), (fa, fb)):
            assert va.shape == vb.shape and np.abs(va.astype(np.float32) - vb.astype(np.float32)).max() < 2e-3
        assert load(reference.store, doc_id).annotation.pages == load(reopened.store, doc_id).annotation.pages


def test_ray_index_prepare_actor_profile_and_errors(built, monkeypatch: pytest.MonkeyPatch) -> None:
    """The prepare actor (run here in-process) rebuilds the annotation with the driver's chat profile;
    a document's own error fails that document, a configuration error stops the run in the driver."""
    from trident_local.annotate import _Annotator, annotation_stage
    from trident_local.errors import ModelNotFoundError
    from trident_local.scale.ray_index import _Prepare, _prepare_kwargs, _record

    _, _, single, _ = built
    root = str(single.store.root.resolve())
    driver = Index.open(root)
    driver.doc_stages.append(annotation_stage(driver, "some-chat-profile"))
    kwargs = _prepare_kwargs(driver, root)
    assert kwargs["doc_stages"] == (STAGE,) and kwargs["annotate_profile"] == "some-chat-profile"
    actor = _Prepare(**kwargs)
    assert actor.stages[-1].name == STAGE and actor.stages[-1].run.profile == "some-chat-profile"

    doc = single.store.document(single.resolve("solar.pdf"))
    row = {"path": "solar.pdf", "doc_id": doc.doc_id, "resumed": True, "done": "ingest,dense",
           "doc_json": json.dumps(doc.to_dict()), "error": "", "fatal": False}

    def fail(exc: Exception):
        def run(self, doc):
            raise exc
        return run

    monkeypatch.setattr(_Annotator, "__call__", fail(RuntimeError("bad page")))
    out = actor(row)
    assert not out["fatal"] and out["prepared"] == "" and out["error"] == "solar.pdf: RuntimeError: bad page"
    failed: list = []
    _record(driver, out, failed.append)
    assert [f.status for f in failed] == ["failed"]

    monkeypatch.setattr(_Annotator, "__call__", fail(ModelNotFoundError("no chat")))
    out = actor(row)
    assert out["fatal"] and out["error"] == "no chat"
    with pytest.raises(TridentError, match="no chat"):
        _record(driver, out, failed.append)


def test_ray_index_prepare_actor_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Prepare actors take one GPU each, or the annotation's chat model's share when it needs more."""
    from trident_local.scale import ray_runtime
    from trident_local.scale.ray_index import _prepare_gpus

    class Cluster:
        def __init__(self, gpus: int):
            self.gpus = gpus

        def cluster_resources(self) -> dict:
            return {"CPU": 16, "GPU": self.gpus}

    monkeypatch.setattr(ray_runtime, "gpus_per_model", lambda profile: 2 if profile == "tp2" else 0)
    plain = {"doc_stages": (), "annotate_profile": None}
    annotate = {"doc_stages": (STAGE,), "annotate_profile": "tp2"}
    assert _prepare_gpus(Cluster(0), annotate) == 0 and _prepare_gpus(Cluster(4), plain) == 1
    assert _prepare_gpus(Cluster(4), dict(annotate, annotate_profile="http")) == 1
    assert _prepare_gpus(Cluster(4), annotate) == 2 and ray_runtime.actor_count(Cluster(4), 2, 2) == 2


# -- eval qa|retrieval --ray ------------------------------------------------------------------------
HELIOS = "helios_annual_report_2023.pdf"
QUESTIONS = [  # MMLongBench-Doc layout
    (HELIOS, "What was the revenue of the Coastal region in 2023?", "95.2", "[2]", "['Table']", "Float"),
    (
        HELIOS,
        "How many megawatts of new solar capacity were connected in 2023?",
        "412",
        "[1]",
        "['Pure-text']",
        "Int",
    ),
    ("sparse_page_retrieval.pdf", "Which method gives the best MRR?", "RRF", "[2]", "['Table']", "Str"),
    ("sparse_page_retrieval.pdf", "Who won the 1998 World Cup?", "Not answerable", "[]", "[]", "None"),
    ("solar.pdf", "What is the solar panel output?", "Not answerable", "[]", "[]", "None"),
]


def _same(a, b) -> bool:
    """Equal, floats to within 1e-3: Ray runs each actor with one torch thread (OMP_NUM_THREADS=1),
    so the embedder's float rounding, and with it a confidence's last digit, may differ."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and abs(a - b) <= 1e-3
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def test_ray_eval_equals_single_process(annotated, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from trident_local.cli import app

    index_dir = str(annotated[0].store.root)
    dataset = tmp_path / "questions.json"
    keys = ("doc_id", "question", "answer", "evidence_pages", "evidence_sources", "answer_format")
    dataset.write_text(json.dumps([dict(zip(keys, q, strict=True)) for q in QUESTIONS * 2]))
    runner = CliRunner()

    def run(cmd: list[str], tag: str, *extra: str) -> tuple[dict, list[dict], dict]:
        out, rows = tmp_path / f"{tag}.json", tmp_path / f"{tag}.jsonl"
        args = [*cmd, "--index", index_dir, "--dataset", str(dataset), "--json", str(out), "--run", str(rows)]
        res = runner.invoke(app, [*args, *extra])
        assert res.exit_code == 0, res.output
        summary = json.loads(out.read_text())
        runtime = summary.pop("runtime", {})
        return summary, [json.loads(line) for line in rows.read_text().splitlines()], runtime

    for cmd, n, workers in (
        (["eval", "qa"], 10, "2"),
        (["eval", "retrieval", "--rerank", "annotated"], 6, "1"),
    ):
        one = run(cmd, f"{cmd[1]}_one")  # a --run file per command: it holds one command's rows
        distributed = run(cmd, f"{cmd[1]}_ray", "--ray", "auto", "--workers", workers)
        assert len(one[1]) == n and one[0]["n"] == n
        assert _same(distributed[:2], one[:2]), cmd  # the same rows, in the same order, and summary
        assert [r["qid"] for r in distributed[1]] == sorted(r["qid"] for r in distributed[1])
        if cmd == ["eval", "qa"]:
            assert len(distributed[2]["workers"]) == 2  # each actor built its own models


# -- without Ray --------------------------------------------------------------------------------------
def _block_ray(monkeypatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)


def test_ray_missing_gives_a_clear_error(monkeypatch) -> None:
    from trident_local.scale import ray_runtime

    _block_ray(monkeypatch)
    with pytest.raises(TridentError, match=r"trident-local\[ray\]"):
        ray_runtime.import_ray()


def test_ray_flags_without_ray_give_a_clear_error(monkeypatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from trident_local.cli import app
    from trident_local.evaluate.qa_run import run_qa
    from trident_local.evaluate.retrieval_run import run_retrieval_on_ray

    idx = Index.create(tmp_path / "ix")
    _block_ray(monkeypatch)
    with pytest.raises(TridentError, match=r"trident-local\[ray\]"):
        annotate_with_ray(idx, address="local")
    with pytest.raises(TridentError, match=r"trident-local\[ray\]"):
        run_qa(idx, [], ray="local")
    with pytest.raises(TridentError, match=r"trident-local\[ray\]"):
        run_retrieval_on_ray(idx, [], pool="bm25", address="local")
    res = CliRunner().invoke(app, ["annotate", "--index", str(tmp_path / "ix"), "--ray", "local"])
    assert res.exit_code != 0 and "trident-local[ray]" in res.output


def test_ray_map_assigns_shards_as_tasks(ray_local, tmp_path: Path) -> None:
    """The --ray hook for per-shard work: Ray tasks give the IVF the in-process build gives."""
    import functools

    from trident_kernels import PackedPages
    from trident_kernels.ann import ARRAYS, TokenIVF
    from trident_kernels.ann_shards import build_from_shards
    from trident_local.scale.ray_runtime import ray_map

    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 20, size=40)
    pages = PackedPages(rng.standard_normal((int(lengths.sum()), 8)).astype(np.float16), np.r_[0, np.cumsum(lengths)])
    centroids = rng.standard_normal((16, 8)).astype(np.float32)
    shards = []
    for i, (a, b) in enumerate([(0, 7), (7, 7), (7, 30), (30, 40)]):
        pages.view(a, b).save(tmp_path / str(i))
        shards.append(functools.partial(PackedPages.load, tmp_path / str(i)))
    got = build_from_shards(shards, centroids=centroids, map_fn=ray_map(ray_local, in_flight=2))
    want = TokenIVF.build(pages, centroids=centroids)
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    assert list(ray_map(ray_local)(abs, [-3, 1, -2])) == [3, 1, 2]
