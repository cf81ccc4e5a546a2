"""Model profiles: one TOML file per model, naming its weights, dtype and engine args.

A profile answers "which backend, which weights, how to load them" so that
``build_model("chat", "qwen2.5-vl-7b-instruct")`` never makes a caller import a
backend. Stages do not call it: they take models from the runtime
(:class:`~trident_local.models.runtime.Models`), which builds each once. The
default profiles ship inside the package
(``trident_local/profiles/*.toml``, read with importlib.resources, so a wheel
has them too). The user models folder (:func:`models_dir`) holds the weights
and any extra profiles; a profile there overrides a packaged one of the same
name. A profile name may also be a path to a ``.toml`` file.

``weights`` in a profile is one of:

- a path; a relative one is relative to the user models folder for a packaged
  profile, else to the profile file's folder (so ``weights =
  "qwen2.5-vl-7b-instruct"`` means ``<models folder>/qwen2.5-vl-7b-instruct/``);
- ``"package:<module>"``: weights shipped inside an installed Python package
  (``<module>.get_model_path()`` or ``<module>.MODEL_DIR``);
- ``""``: nothing local (a remote server, the tesseract binary).

Nothing is downloaded at run time unless the caller passes ``allow_download=True``
(then a missing local folder is fetched from ``hf_id`` with huggingface_hub).
"""

from __future__ import annotations

import importlib
import importlib.resources
import inspect
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from trident_local.errors import ModelNotFoundError, TridentError
from trident_local.models import registry

NO_MODEL = "none"  # profile name meaning "use the stage's rule-based, no-model strategy"
PACKAGE_PREFIX = "package:"

# What a complete local model folder must contain, per backend (any one pattern of each tuple).
_REQUIRED_FILES: dict[str, list[tuple[str, ...]]] = {
    "vllm": [("config.json",), ("*.safetensors", "*.gguf", "*.bin")],
    "vllm-async": [("config.json",), ("*.safetensors", "*.gguf", "*.bin")],
    "transformers": [("config.json",), ("*.safetensors", "*.gguf", "*.bin")],
    "sentence-transformers": [("config.json",), ("*.safetensors", "*.bin")],
    "bge-m3": [("config.json",), ("*.safetensors", "*.bin"), ("tokenizer.json", "sentencepiece.bpe.model")],
    "colpali": [("*.safetensors", "*.bin")],
}


PACKAGED, USER, FILE = "package", "user", "file"  # where a profile was read from (ModelProfile.origin)
_CHECKOUT = Path(__file__).resolve().parents[2]


def models_dir() -> Path:
    """The user models folder: weights folders, plus profiles that add to or override the packaged ones.

    ``$TRIDENT_MODELS_DIR``; else ``models/`` of the source checkout this package runs
    from, when there is one; else ``$XDG_DATA_HOME/trident/models``
    (``~/.local/share/trident/models``), which is where an installed wheel looks.
    """
    env = os.environ.get("TRIDENT_MODELS_DIR")
    if env:
        return Path(env).expanduser().resolve()
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "models").is_dir():
        return _CHECKOUT / "models"
    data_home = os.environ.get("XDG_DATA_HOME") or "~/.local/share"
    return (Path(data_home).expanduser() / "trident" / "models").resolve()


def packaged_profiles() -> Traversable:
    """The default profiles shipped as package data."""
    return importlib.resources.files("trident_local").joinpath("profiles")


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
    origin: str = ""  # PACKAGED, USER or FILE: decides what relative weights paths are relative to

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
            base = models_dir() if self.origin == PACKAGED or not self.source else Path(self.source).parent
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


def _profile_file(name: str) -> tuple[Path | Traversable, str]:
    """The file a profile name or path means, and its origin (user folder first, then the package)."""
    p = Path(name).expanduser()
    if name.endswith(".toml") or p.is_file():
        if not p.is_file():
            raise TridentError(f"model profile file not found: {p}")
        p = p.resolve()
        return p, USER if p.parent == models_dir() else FILE
    user = models_dir() / f"{name}.toml"
    if user.is_file():
        return user, USER
    packaged = packaged_profiles().joinpath(f"{name}.toml")
    if packaged.is_file():
        return packaged, PACKAGED
    known = ", ".join(pr.name for pr in list_profiles()) or "none"
    raise TridentError(
        f"no model profile {name!r} (looked in {models_dir()} and the packaged profiles); known profiles: {known}"
    )


def load_profile(name: str) -> ModelProfile:
    """Read a profile by name (user models folder, then packaged) or from a path to a .toml file."""
    path, origin = _profile_file(name)
    return _read_profile(path, origin)


def _read_profile(path: Path | Traversable, origin: str) -> ModelProfile:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise TridentError(f"{path}: invalid TOML: {e}") from e
    known = {f.name for f in fields(ModelProfile)} - {"source", "origin"}
    unknown = set(data) - known
    if unknown:
        raise TridentError(f"{path}: unknown profile keys {sorted(unknown)}; allowed: {sorted(known)}")
    for key in ("role", "backend"):
        if key not in data:
            raise TridentError(f"{path}: profile needs a {key!r}")
    data.setdefault("name", path.name.removesuffix(".toml"))
    data.setdefault("weights", "")
    data["source"], data["origin"] = str(path), origin
    return ModelProfile(**data)


def list_profiles() -> list[ModelProfile]:
    """The packaged profiles and those in the user models folder (which win by file name), sorted
    by role then name; broken files are skipped."""
    files: dict[str, tuple[Path | Traversable, str]] = {
        f.name: (f, PACKAGED) for f in packaged_profiles().iterdir() if f.name.endswith(".toml")
    }
    user = models_dir()
    if user.is_dir():
        files.update({f.name: (f, USER) for f in user.glob("*.toml")})
    out = []
    for f, origin in files.values():
        try:
            out.append(_read_profile(f, origin))
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
    if p.origin == PACKAGED:
        msg += (
            f" Or copy the profile to {models_dir() / (p.name + '.toml')} (the user models folder; "
            "$TRIDENT_MODELS_DIR moves it) and point its `weights` at a folder that has them."
        )
    else:
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
    if accepted is not None and "weights" in accepted:  # its `model` is something else (a served name)
        implicit["weights"] = implicit.pop("model")
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


# A backend and the one that runs the same weights for many threads at once, batching across them
# (what a service builds, see ``runtime.ModelCache``); the latter reads the former's [options.<backend>].
CONCURRENT_BACKENDS = {"vllm": "vllm-async"}


def concurrent_backend(profile: str | ModelProfile) -> str | None:
    """The backend to build ``profile`` with when many threads share it, or None for its own."""
    try:
        p = profile if isinstance(profile, ModelProfile) else load_profile(profile)
    except TridentError:  # an unknown profile: building it says so
        return None
    return CONCURRENT_BACKENDS.get(p.backend)


def backend_options(p: ModelProfile) -> dict[str, Any]:
    """Options for the profile's backend: the common ones plus the ``[options.<backend>]`` table.

    A sub-table named after a backend holds options only that backend takes, so
    one profile can be run with vllm on a GPU and with transformers on a laptop.
    """
    backends = {n for _, n in registry.available()}
    opts = {k: v for k, v in p.options.items() if not (k in backends and isinstance(v, dict))}
    family = {v: k for k, v in CONCURRENT_BACKENDS.items()}.get(p.backend, p.backend)
    specific = p.options.get(p.backend, p.options.get(family))
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
