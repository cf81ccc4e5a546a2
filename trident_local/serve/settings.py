"""Service settings: defaults, then a JSON/TOML file, then TRIDENT_SERVE_* environment, then flags."""

from __future__ import annotations

import ipaddress
import json
import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from trident_local.errors import TridentError

ENV_PREFIX = "TRIDENT_SERVE_"
MIN_KEY_CHARS = 16  # the start-up admin key of a server other hosts can reach


@dataclass
class Settings:
    """Everything the service needs to start; plain values so a file or the environment can set them."""

    indexes: dict[str, str] = field(default_factory=dict)  # name -> index directory
    data_dir: str = ""  # where POST /api/indexes creates new indexes ("" = creating is off)
    host: str = "127.0.0.1"
    port: int = 8000
    chat: str = ""  # chat/VLM profile for asks, verification and traces ("" = each index's own; "none" = no model)
    api_key: str = ""  # admin key given at start-up (TRIDENT_API_KEY); never stored in clear
    keys_file: str = ""  # hashed API keys; default: <first index>/serve_keys.json
    max_upload_mb: float = 200.0  # one uploaded file
    max_request_mb: float = 1024.0  # one upload request (several files)
    max_json_kb: float = 256.0  # JSON bodies (questions, answers to verify)
    max_question_chars: int = 4000
    max_answer_chars: int = 20000  # /verify: an answer costs CPU per claim, so it is bounded like a question
    page_cache_mb: float = 0.0  # page images kept per index, least recently used out first (0: 1 MB per
    # indexed page, at least 64 MB)
    ocr_max_pages: int = 200  # per uploaded file; pages past it stay image-only (a warning says so)
    allowed_hosts: list[str] = field(default_factory=list)  # Host header values served; empty = loopback
    # names on a loopback bind, any on another (DNS rebinding needs a loopback server without keys)
    api_docs: bool = False  # /docs and /redoc (Swagger UI, ReDoc) load scripts from CDNs: off by default
    drain_s: float = 30.0  # on SIGTERM, requests still running after this get a JSON 503
    model_slots: int = 4  # asks / verifies running at once
    model_queue: int = 64  # more waiting than this: 429 with Retry-After
    ask_workers: int = -1  # processes for no-model asks and searches (-1: one per core up to model_slots;
    # 0: threads of the server process, which then share its CPU with the event loop)
    retry_after_s: int = 2
    batch_max: int = 64  # requests per call of a chat backend without batching of its own (not vllm: async engine)
    batch_wait_ms: float = 0.0  # extra wait for more requests before an engine call (0: batch what is queued)
    index_pause_s: float = 0.0  # pause between files of an indexing job, to leave CPU to asks
    cors_origins: list[str] = field(default_factory=list)  # empty = CORS off
    log_json: bool = True

    def __post_init__(self) -> None:
        self.indexes = {str(k): str(v) for k, v in self.indexes.items()}

    @property
    def loopback(self) -> bool:
        if self.host in ("localhost", ""):
            return self.host == "localhost"
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def check_exposure(self) -> None:
        """Refuse, before anything is created on disk, to serve another host without a real key."""
        if self.loopback:
            return
        keys = self.resolved_keys_file
        if not self.api_key and not (keys is not None and keys.exists()):
            raise TridentError(f"binding {self.host} (not loopback) needs an API key: set TRIDENT_API_KEY")
        if self.api_key and len(self.api_key) < MIN_KEY_CHARS:
            raise TridentError(f"TRIDENT_API_KEY is {len(self.api_key)} characters; a server on {self.host} needs "
                               f"at least {MIN_KEY_CHARS} (e.g. openssl rand -hex 32)")

    @property
    def served_hosts(self) -> list[str]:
        """Host header names answered: ``allowed_hosts``, else loopback names on loopback, else any."""
        if self.allowed_hosts:
            return list(self.allowed_hosts)
        if self.loopback:
            from trident_local.serve.guard import LOOPBACK_NAMES

            return [*LOOPBACK_NAMES, self.host]
        return ["*"]

    @property
    def resolved_keys_file(self) -> Path | None:
        if self.keys_file:
            return Path(self.keys_file)
        if self.indexes:
            return Path(next(iter(self.indexes.values()))) / "serve_keys.json"
        if self.data_dir:
            return Path(self.data_dir) / "serve_keys.json"
        return None

    @classmethod
    def load(cls, file: str | Path | None = None, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults < ``file`` (.toml or .json) < environment (TRIDENT_SERVE_<FIELD>, TRIDENT_API_KEY) < overrides."""
        env = dict(os.environ if env is None else env)
        values: dict[str, Any] = {}
        if file:
            p = Path(file)
            try:
                text = p.read_text(encoding="utf-8")
                values.update(tomllib.loads(text) if p.suffix == ".toml" else json.loads(text))
            except (OSError, ValueError) as e:
                raise TridentError(f"cannot read the settings file {p}: {e}") from e
        known = {f.name: f for f in fields(cls)}
        for name, _f in known.items():
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is None:
                continue
            default = getattr(cls(), name)
            try:
                if isinstance(default, bool):
                    values[name] = raw.lower() in ("1", "true", "yes", "on")
                elif isinstance(default, int | float):
                    values[name] = type(default)(raw)
                elif isinstance(default, list):
                    values[name] = [x.strip() for x in raw.split(",") if x.strip()]
                elif isinstance(default, dict):
                    values[name] = dict(kv.split("=", 1) for kv in raw.split(",") if "=" in kv)
                else:
                    values[name] = raw
            except ValueError as e:
                raise TridentError(f"{ENV_PREFIX}{name.upper()}={raw!r}: {e}") from e
        if env.get("TRIDENT_API_KEY"):
            values["api_key"] = env["TRIDENT_API_KEY"]
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = set(values) - set(known)
        if unknown:
            raise TridentError(f"unknown settings: {', '.join(sorted(unknown))}")
        return cls(**values)
