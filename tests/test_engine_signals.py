"""Engine tier: a `trident` command that started a real vLLM engine takes all of its processes with it.

First contact: `trident ask ... --profile smollm2-135m-instruct-vllm`, sent SIGTERM once its engine was
up (as `timeout`, systemd or a batch scheduler do), exited, but vLLM's EngineCore, its Worker (6 GB
resident) and a resource tracker kept running, re-parented to init. Here the command (and `trident
serve`) is ended by SIGTERM, SIGINT, SIGHUP and kill -9 once its engine is up, and no process of its
tree, noted just before the signal, may be left 15 s later (trident_local/models/engine_guard.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from serve_helpers import die_with_parent, free_port

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[1]
ENGINE_PY = REPO / ".venv-engine" / "bin" / "python"
PROFILE = "smollm2-135m-instruct-vllm"
HELIOS = REPO / "samples" / "helios_annual_report_2023.pdf"
WITHIN_S = 15.0
START_S = 900  # a loaded 2-core machine


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "TRIDENT_ENGINE"))}
    e.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "kernels")])
    return e


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not ENGINE_PY.is_file():
        pytest.fail("no engine environment: run `bash scripts/setup.sh --engine` (or --dev)")
    ix = tmp_path_factory.mktemp("signals") / "ix"
    subprocess.run([sys.executable, "-m", "trident_local.cli", "index", str(HELIOS), "--index", str(ix),
                    "--ocr", "none"], cwd=REPO, env=env(), check=True, capture_output=True, timeout=600)
    return ix


def engine_up(proc: subprocess.Popen, log: Path) -> list[psutil.Process]:
    """Wait until the command's engine is up (its EngineCore and worker started, the engine built);
    return the command's whole process tree at that moment."""
    deadline = time.monotonic() + START_S
    root = psutil.Process(proc.pid)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the command exited {proc.returncode} before its engine was up:\n{log.read_text()[-3000:]}")
        text = log.read_text(errors="replace")
        if "init engine" in text or "Application startup complete" in text or "serving " in text:
            tree = [root, *root.children(recursive=True)]
            if len(tree) >= 4:  # the command, the watchdog, the engine core and its worker at least
                return tree
        time.sleep(1)
    pytest.fail(f"the engine did not come up:\n{log.read_text()[-3000:]}")


def left_after(procs: list[psutil.Process], seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        alive = []
        for p in procs:
            with contextlib.suppress(psutil.Error):
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{p.pid} {p.name()} {' '.join(p.cmdline())[:100]}")
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


def end_and_check(proc: subprocess.Popen, log: Path, sig: int) -> None:
    tree = engine_up(proc, log)
    names = [" ".join(p.cmdline()) for p in tree]
    assert any("engine_guard" in n for n in names), names
    print(f"tree before {signal.Signals(sig).name}: {[p.name() for p in tree]}")
    t0 = time.monotonic()
    os.kill(proc.pid, sig)
    left = left_after(tree, WITHIN_S)
    assert left == [], f"still running {WITHIN_S:.0f} s after {signal.Signals(sig).name}: {left}"
    print(f"every process ended {time.monotonic() - t0:.1f} s after {signal.Signals(sig).name}")


def run(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen([str(ENGINE_PY), "-m", "trident_local.cli", *args], cwd=REPO, env=env(),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent)


def cleanup(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGHUP],
                         ids=["SIGTERM", "SIGKILL", "SIGINT", "SIGHUP"])
def test_ask_takes_its_engine_with_it(sig: int, index: Path, tmp_path: Path) -> None:
    log = tmp_path / "ask.log"
    proc = run(["ask", "What was the revenue of the Coastal region in 2023?", "--index", str(index),
                "--rerank", "none", "--answer", "lenses", "--profile", PROFILE], log)
    try:
        end_and_check(proc, log, sig)
    finally:
        cleanup(proc)


def test_serve_takes_its_engine_with_it(index: Path, tmp_path: Path) -> None:
    """`trident serve --chat <vllm profile>` builds its engine on the first request; SIGTERM then."""
    import httpx

    log = tmp_path / "serve.log"
    port = free_port()
    proc = run(["serve", "--index", str(index), "--port", str(port), "--chat", PROFILE], log)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            if proc.poll() is not None:
                pytest.fail(f"serve exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        r = httpx.post(f"{url}/api/indexes/{index.name}/ask", timeout=START_S,
                       json={"question": "What was the revenue in 2023?", "answer": "plain", "rerank": "none"})
        assert r.status_code == 200, r.text[:500]
        end_and_check(proc, log, signal.SIGTERM)
    finally:
        cleanup(proc)
