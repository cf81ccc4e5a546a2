"""API keys: stored as SHA-256 hashes, scopes read < write < admin, optional per-index access.

A key is sent as ``Authorization: Bearer <key>``. Keys are random 32-byte tokens, so a
plain SHA-256 (no salt, no slow hash) is enough to make the stored file useless to a reader.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from trident_local.atomic import atomic_write_json, read_json
from trident_local.errors import TridentError
from trident_local.serve.validate import unencodable

SCOPES = ("read", "write", "admin")


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass
class ApiKey:
    key_id: str
    hash: str
    scope: str  # read | write | admin
    indexes: list[str] = field(default_factory=lambda: ["*"])  # names this key may use
    label: str = ""
    created: float = 0.0

    def allows(self, scope: str, index: str | None = None) -> bool:
        if SCOPES.index(self.scope) < SCOPES.index(scope):
            return False
        return index is None or "*" in self.indexes or index in self.indexes

    def public(self) -> dict:
        d = asdict(self)
        d.pop("hash")
        return d


class KeyStore:
    """Keys from the keys file plus the start-up admin key (kept in memory only, hashed)."""

    def __init__(self, path: Path | None, startup_key: str = ""):
        self.path = path
        self._lock = threading.Lock()
        self._keys: dict[str, ApiKey] = {}
        if path is not None and path.exists():
            try:
                self._keys = {k["key_id"]: ApiKey(**k) for k in read_json(path).get("keys", [])}
            except (ValueError, TypeError, KeyError) as e:
                raise TridentError(f"{path} is not a valid keys file ({e}); fix or remove it") from e
        if startup_key:
            self._keys["startup"] = ApiKey("startup", key_hash(startup_key), "admin", label="TRIDENT_API_KEY")

    @property
    def enabled(self) -> bool:
        """Keys are required as soon as one exists."""
        return bool(self._keys)

    def check(self, key: str) -> ApiKey | None:
        h = key_hash(key)
        for k in list(self._keys.values()):
            if hmac.compare_digest(k.hash, h):
                return k
        return None

    def create(self, scope: str, indexes: list[str] | None = None, label: str = "") -> tuple[str, ApiKey]:
        """A new key; the clear text is returned once and never stored."""
        if scope not in SCOPES:
            raise TridentError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        if self.path is None:
            raise TridentError("no keys file configured (set keys_file)")
        if any(unencodable(t) is not None for t in [*(indexes or []), label]):
            raise TridentError("a key's index names and label must be valid Unicode text")
        secret = "tk_" + secrets.token_urlsafe(32)
        k = ApiKey(secrets.token_hex(6), key_hash(secret), scope, list(indexes or ["*"]), label, time.time())
        with self._lock:
            self._commit({**self._keys, k.key_id: k})
        return secret, k

    def delete(self, key_id: str) -> bool:
        with self._lock:
            if key_id == "startup" or key_id not in self._keys:
                return False
            self._commit({i: k for i, k in self._keys.items() if i != key_id})
            return True

    def list(self) -> list[ApiKey]:
        return list(self._keys.values())

    def _commit(self, keys: dict[str, ApiKey]) -> None:
        """Write ``keys`` to the file, then make them the keys in memory: a failed write (disk full,
        text the file cannot hold) raises and changes nothing, so memory and disk never disagree
        and a key whose revocation was answered stays revoked after a restart."""
        assert self.path is not None
        stored = [asdict(k) for k in keys.values() if k.key_id != "startup"]
        atomic_write_json(self.path, {"keys": stored})
        self.path.chmod(0o600)
        self._keys = keys
