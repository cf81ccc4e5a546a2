#!/usr/bin/env bash
# Everything a lent GPU machine can tell us, in one go (under 8 minutes), run as is from the repository
# root on a machine where torch, triton and transformers are installed and nothing else was downloaded:
#
#   bash scripts/gpu_check.sh                 # on the GPU; results in $OUT (default ./gpu-check-<time>/)
#   bash scripts/gpu_check.sh --dry-run       # every step at toy size on the CPU (what CI runs)
#   bash scripts/gpu_check.sh --wheels DIR    # install missing Python packages from DIR, not PyPI
#
# Steps (each under its own time limit, all under one budget; a step that fails or runs out of time is
# reported and the others still run):
#   env       nvidia-smi, torch / triton / transformers versions, the GPU                  -> env.json
#   deps      the packages the steps import beyond torch/triton/transformers (pytest, pymupdf,
#             colpali-engine, peft, pillow, numpy): from --wheels DIR (pip download them there on a
#             machine with PyPI) or PyPI when missing; a step whose packages are still missing is
#             skipped, saying which                                                        -> deps.log
#   tests     pytest -m gpu: the Triton MaxSim kernel on CUDA, the transformers VLM chat on CUDA
#             (a tiny random Qwen2.5-VL)                                                   -> tests.xml
#   maxsim    the fused CUDA MaxSim kernel against colpali-engine's scorer, error against float64,
#             1,000 and 10,000 pages in fp32 and bf16, then 100,000 pages in bf16          -> maxsim*.json
#   pages     ColQwen2.5 page embedding at the real 3B size (random weights): pages/s and peak memory
#             by batch size, doubling until the GPU's memory runs out                      -> page_embedding.json
#   caption   benchmarks/gpu_caption_throughput.py on the Qwen2.5-VL-7B architecture: vision,
#             prefill and decode tokens/s                                                  -> caption.json
# then one table of every step (scripts/gpu_check_table.py), also written to table.txt. The log of
# every step is gpu_check.log; benchmarks' recorded results go to $OUT/results/, never to the
# repository's benchmarks/results/.
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
WHEELS=""
BUDGET_S=${GPU_CHECK_BUDGET_S:-460}  # 8 minutes, less the table and slack
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --wheels) WHEELS=$2; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
OUT=${OUT:-gpu-check-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$OUT/results"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/gpu_check.log"
STEPS="$OUT/steps.jsonl"
: >"$LOG"
: >"$STEPS"
export PYTHONPATH="$PWD:$PWD/kernels${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export TRIDENT_BENCH_RESULTS="$OUT/results"
start=$(date +%s)

left() { echo $((BUDGET_S - ($(date +%s) - start))); }

# step NAME LIMIT_S REQUIRES -- command...: run under min(LIMIT_S, budget left), log it, record the outcome
step() {
  local name=$1 limit=$2 needs=$3
  shift 4
  local missing="" m
  for m in ${needs//,/ }; do
    "$PY" -c "import $m" >/dev/null 2>&1 || missing="$missing $m"
  done
  local budget
  budget=$(left)
  [ "$budget" -lt "$limit" ] && limit=$budget
  if [ -n "$missing" ]; then
    echo "== $name: skipped, missing Python packages:$missing" | tee -a "$LOG"
    printf '{"step": "%s", "status": "skipped", "why": "missing:%s", "seconds": 0}\n' "$name" "$missing" >>"$STEPS"
    return
  fi
  if [ "$limit" -le 5 ]; then
    echo "== $name: skipped, the ${BUDGET_S} s budget is spent" | tee -a "$LOG"
    printf '{"step": "%s", "status": "skipped", "why": "budget spent", "seconds": 0}\n' "$name" >>"$STEPS"
    return
  fi
  echo "== $name (limit ${limit} s): $*" | tee -a "$LOG"
  local t0 rc status
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
  rc=$?
  case $rc in
    0) status=ok ;;
    124|137) status=timeout ;;
    *) status=failed ;;
  esac
  echo "   $name: $status (exit $rc, $(($(date +%s) - t0)) s)" | tee -a "$LOG"
  printf '{"step": "%s", "status": "%s", "exit": %d, "seconds": %d}\n' "$name" "$status" "$rc" \
    "$(($(date +%s) - t0))" >>"$STEPS"
}

# -- env ------------------------------------------------------------------------------------------------
{ nvidia-smi 2>&1 || echo "no nvidia-smi"; } >>"$LOG"
"$PY" - "$OUT/env.json" "$DRY" <<'EOF' 2>>"$LOG"
import json, platform, sys
info = {"python": platform.python_version(), "machine": platform.machine(), "dry_run": sys.argv[2] == "1"}
for name in ("torch", "triton", "transformers"):
    try:
        info[name] = __import__(name).__version__
    except Exception as e:  # noqa: BLE001
        info[name] = f"missing ({type(e).__name__})"
try:
    import torch
    info["cuda"] = torch.cuda.is_available()
    if info["cuda"]:
        p = torch.cuda.get_device_properties(0)
        info["gpu"] = p.name
        info["gpu_memory_gib"] = round(p.total_memory / 2**30, 1)
        info["cuda_version"] = torch.version.cuda
except Exception as e:  # noqa: BLE001
    info["cuda"] = f"error: {e}"
json.dump(info, open(sys.argv[1], "w"), indent=1)
print(json.dumps(info))
EOF
cat "$OUT/env.json" | tee -a "$LOG"; echo
if [ "$DRY" = 0 ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "torch sees no CUDA device: run with --dry-run on a CPU" | tee -a "$LOG"
  exit 1
fi

# -- deps: what the steps import beyond torch, triton and transformers -----------------------------------
need_pkgs=()
for spec in pytest:pytest fitz:pymupdf colpali_engine:colpali-engine peft:peft PIL:pillow numpy:numpy; do
  mod=${spec%%:*}
  "$PY" -c "import $mod" >/dev/null 2>&1 || need_pkgs+=("${spec#*:}")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "== deps: installing ${need_pkgs[*]} ($([ -n "$WHEELS" ] && echo "from $WHEELS" || echo "from PyPI"))" | tee -a "$LOG"
  cons="$OUT/constraints.txt"  # the machine's torch, triton and transformers stay as they are
  "$PY" - "$cons" <<'EOF2' 2>>"$LOG"
import sys
from importlib.metadata import PackageNotFoundError, version
with open(sys.argv[1], "w") as f:
    for n in ("torch", "triton", "transformers", "tokenizers", "numpy"):
        try:
            f.write(f"{n}=={version(n)}\n")
        except PackageNotFoundError:
            pass
EOF2
  pip=("$PY" -m pip install -q --disable-pip-version-check --retries 0 --timeout 10 -c "$cons")
  [ -n "$WHEELS" ] && pip+=(--no-index --find-links "$WHEELS")
  rest=()
  for p in "${need_pkgs[@]}"; do [ "$p" = colpali-engine ] || rest+=("$p"); done
  if [ ${#rest[@]} -gt 0 ]; then
    timeout 120 "${pip[@]}" "${rest[@]}" >>"$OUT/deps.log" 2>&1 || echo "   could not install ${rest[*]} (deps.log)" | tee -a "$LOG"
  fi
  if [[ " ${need_pkgs[*]} " == *" colpali-engine "* ]]; then  # --no-deps: it pins torch below the machine's
    timeout 60 "${pip[@]}" --no-deps colpali-engine >>"$OUT/deps.log" 2>&1 \
      || echo "   could not install colpali-engine (deps.log)" | tee -a "$LOG"
  fi
fi

# -- the steps ---------------------------------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  step tests 120 pytest,torch -- "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/test_kernels_triton.py \
    tests/test_models_chat_transformers.py --junitxml "$OUT/tests.xml"
  step vlm_chat 120 pytest,transformers,PIL -- "$PY" -m pytest -q -p no:cacheprovider \
    tests/test_models_chat_transformers.py -k "vlm_takes_pil" --junitxml "$OUT/vlm_chat.xml"
  step maxsim 120 torch,numpy,colpali_engine -- "$PY" benchmarks/maxsim.py --device cpu --pages 50 200 \
    --dtypes fp32 bf16 --methods ours colpali_engine --page-tokens 64 --queries 4 --repeats 1 --no-memory \
    --out "$OUT/maxsim.json"
  step maxsim_large 120 torch,numpy,colpali_engine -- "$PY" benchmarks/maxsim.py --device cpu --pages 1000 \
    --dtypes bf16 --methods ours colpali_engine --page-tokens 64 --queries 4 --repeats 1 --no-memory \
    --out "$OUT/maxsim_large.json"
  step pages 180 torch,colpali_engine,fitz,peft -- "$PY" benchmarks/page_embedding.py --tiny --device cpu \
    --batch-sizes 2 4 --pages 4 --repeats 1 --until-oom --out "$OUT/page_embedding.json"
  step caption 180 torch,transformers,PIL -- "$PY" benchmarks/gpu_caption_throughput.py --tiny --repeats 1 \
    --out "$OUT/caption.json"
else
  step tests 120 pytest,torch,triton -- "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/test_kernels_triton.py \
    tests/test_models_chat_transformers.py --junitxml "$OUT/tests.xml"
  step maxsim 100 torch,numpy,colpali_engine -- "$PY" benchmarks/maxsim.py --device cuda --pages 1000 10000 \
    --dtypes fp32 bf16 --methods ours colpali_engine --repeats 3 --no-memory --out "$OUT/maxsim.json"
  step maxsim_large 90 torch,numpy,colpali_engine -- "$PY" benchmarks/maxsim.py --device cuda --pages 100000 \
    --dtypes bf16 --methods ours colpali_engine --repeats 1 --no-memory --out "$OUT/maxsim_large.json"
  step pages 130 torch,colpali_engine,fitz,peft -- "$PY" benchmarks/page_embedding.py --device cuda \
    --batch-sizes 4 8 16 32 64 128 256 --pages 128 --repeats 1 --until-oom --out "$OUT/page_embedding.json"
  step caption 130 torch,transformers,PIL -- "$PY" benchmarks/gpu_caption_throughput.py --repeats 1 \
    --out "$OUT/caption.json"
fi

"$PY" scripts/gpu_check_table.py "$OUT" | tee "$OUT/table.txt"
echo "total $(($(date +%s) - start)) s; results, log and table in $OUT"
! grep -q '"status": "\(failed\|timeout\)"' "$STEPS"
