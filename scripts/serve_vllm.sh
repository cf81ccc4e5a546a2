#!/usr/bin/env bash
# Launch `vllm serve` for a chat model profile (name or .toml path), with the profile's
# weights path, dtype, quantization and engine args; the model is served under the profile's
# name. Extra arguments go to vllm serve (e.g. --port 8001 --api-key KEY).
#
#   scripts/serve_vllm.sh qwen2.5-vl-7b-instruct --port 8000
#   then: build_model("chat", "vllm-server")   (the vllm-server profile points at :8000)
set -euo pipefail

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
profile="$1"; shift
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  if [[ -x "$root/.venv/bin/python" ]]; then python="$root/.venv/bin/python"; else python="python3"; fi
fi
vllm_bin="${VLLM:-vllm}"
if ! command -v "$vllm_bin" >/dev/null 2>&1; then
  echo "error: '$vllm_bin' not found; install vLLM (pip install 'trident-local[gpu]') or set VLLM=/path/to/vllm" >&2
  exit 2
fi

args=()
while IFS= read -r -d '' a; do args+=("$a"); done < <(cd "$root" && "$python" -m trident_local.models.vllm_serve "$profile")
if [[ ${#args[@]} -eq 0 ]]; then
  exit 2  # the error was printed above
fi
echo "+ $vllm_bin serve ${args[*]} $*" >&2
exec "$vllm_bin" serve "${args[@]}" "$@"
