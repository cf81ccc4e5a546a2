"""The index manifest: schema version, config, documents with per-stage state, pool builds."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from trident_local.config import Config

SCHEMA_VERSION = 1


@dataclass
class DocEntry:
    doc_id: str
    file_name: str
    path: str
    n_pages: int
    added: float = field(default_factory=time.time)
    stages: dict[str, bool] = field(default_factory=dict)  # stage name -> finished
    warnings: list[str] = field(default_factory=list)

    def done(self, stages: list[str]) -> bool:
        return all(self.stages.get(s) for s in stages)


@dataclass
class PoolEntry:
    name: str
    fingerprint: str  # hash of the document ids (and models) it was built from
    n_pages: int
    built: float = field(default_factory=time.time)
    info: dict[str, Any] = field(default_factory=dict)
    path: str = ""  # folder under pools/ ("" = pools/<name>, the layout before versioned folders)


@dataclass
class Manifest:
    schema_version: int = SCHEMA_VERSION
    created: float = field(default_factory=time.time)
    config: Config = field(default_factory=Config)
    documents: dict[str, DocEntry] = field(default_factory=dict)
    pools: dict[str, PoolEntry] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Manifest:
        return cls(
            schema_version=d["schema_version"],
            created=d.get("created", 0.0),
            config=Config.from_stored(d.get("config", {})),
            documents={k: DocEntry(**v) for k, v in d.get("documents", {}).items()},
            pools={k: PoolEntry(**v) for k, v in d.get("pools", {}).items()},
        )
