"""The model runtime: one lazily built instance per (role, profile), shared by every stage.

    models = Models(index.config)        # an Index owns one: ``index.models``
    models.chat                          # the chat profile's model, or None for "none"
    models.use_profile("chat", "none")   # this run without a chat model (no-model strategies)
    Models(config, overrides={"chat": fake})   # tests: inject a model for a role
    Models(config, cache=shared)         # a cache of their own (a service's indexes, shared engines)

Stages receive models (or this runtime) and never build them: :meth:`Models.get`
is the one place that calls :func:`~trident_local.models.profiles.build_model`.
A vLLM engine takes most of a GPU, so building it twice in one process (pool,
reranker, answer and verifier each asking for "the chat model") does not fit;
the lock makes the lazy build safe when stages run in threads. A runtime built
without a ``cache`` uses the process's default one (:func:`default_cache`), so two
``Models()`` made in different places (an index's, a pool's opened on a bare
store, a verifier's) still build each model once. Every build is
also recorded process-wide (:func:`runtime_report`, in the CLI's JSON), so a
second engine in one process shows even when two runtimes built it.

Chat models are built wrapped in :class:`~trident_local.models.metered.MeteredChat`:
each request is checked against the model's context before it is sent, and
each call's tokens are counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from trident_local.models.batcher import BatchingChat, BatchPolicy
from trident_local.models.metered import ChatUsage, MeteredChat
from trident_local.models.profiles import NO_MODEL, ModelProfile, build_model, concurrent_backend

if TYPE_CHECKING:
    from trident_local.config import Config

CONFIG_ROLES = ("chat", "embedder", "multivector", "ocr")  # roles whose profile the index config names

# (role, profile, chat usage or None, what runs it or None) of every runtime's builds, in order;
# no model is kept alive here
_PROCESS_BUILDS: list[tuple[str, str, ChatUsage | None, str | None]] = []
_PROCESS_LOCK = threading.Lock()


def _key(profile: str | ModelProfile) -> str:
    return profile.name if isinstance(profile, ModelProfile) else str(profile)


def is_no_model(profile: str | ModelProfile | None) -> bool:
    return profile is None or (isinstance(profile, str) and profile.lower() == NO_MODEL)


class ModelCache:
    """The built models of a process, shareable by several runtimes: one instance per (role, profile).

    ``concurrent``: role -> :class:`BatchPolicy` for roles that many threads call at once (a
    service's request threads and jobs). A backend with a concurrent form is built in it
    (``vllm`` as ``vllm-async``: the engine batches continuously across callers); a backend
    that batches across callers itself (``concurrent = True``: the async engine, an
    OpenAI-compatible server) is called directly; any other is wrapped in a
    :class:`BatchingChat` with the role's policy. ``on_batch(role, n)``: the batch size of each
    BatchingChat engine call, or the requests in the async engine as each one is added.
    """

    def __init__(self, concurrent: Mapping[str, BatchPolicy] | None = None,
                 on_batch: Callable[[str, int], None] | None = None):
        self.concurrent = dict(concurrent or {})
        self.on_batch = on_batch
        self.built: dict[tuple[str, str], Any] = {}
        self.builds: list[tuple[str, str]] = []  # (role, profile) in build order
        self.lock = threading.Lock()

    def get_or_build(self, role: str, profile: str | ModelProfile, options: Mapping[str, Any]) -> Any:
        key = (role, _key(profile))
        with self.lock:  # held while building: a second caller waits for the first instance
            if key not in self.built:
                shared = role in self.concurrent
                if shared and "backend" not in options and (backend := concurrent_backend(profile)):
                    options = {**options, "backend": backend}
                model = build_model(role, profile, **options)
                hook = (lambda n, r=role: self.on_batch(r, n)) if self.on_batch else None
                batches_itself = getattr(model, "concurrent", False)
                if shared and batches_itself and hasattr(model, "on_request"):
                    model.on_request = hook
                if role == "chat" and model is not None:
                    model = MeteredChat(model)
                with _PROCESS_LOCK:
                    _PROCESS_BUILDS.append((*key, model.usage if isinstance(model, MeteredChat) else None,
                                            getattr(model, "runtime", None)))
                if shared and not batches_itself and hasattr(model, "chat"):
                    model = BatchingChat(model, self.concurrent[role], on_batch=hook)
                self.built[key] = model
                self.builds.append(key)
            return self.built[key]

    def close(self) -> None:
        """Stop the batchers' dispatcher threads and the async engines (the rest go with the process)."""
        for model in list(self.built.values()):
            if hasattr(model, "close"):
                model.close()


_DEFAULT_CACHE: ModelCache | None = None


def default_cache() -> ModelCache:
    """The process's model cache: what every runtime built without a ``cache`` of its own shares."""
    global _DEFAULT_CACHE
    with _PROCESS_LOCK:
        if _DEFAULT_CACHE is None:
            _DEFAULT_CACHE = ModelCache()
        return _DEFAULT_CACHE


def _role_model(role: str) -> property:
    """``Models.<role>``: the role's model under its profile, None for "none" (:meth:`Models.get`)."""
    return property(lambda self: self.get(role), doc=f"The {role} model (None for no model); built once.")


class Models:
    """Lazily built models per (role, profile); the profile of a role defaults to the config's."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        profiles: Mapping[str, str | ModelProfile] | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        cache: ModelCache | None = None,
    ):
        """``overrides``: role -> a ready model (see :meth:`provide`); ``profiles``: role -> profile
        for this runtime instead of the config's; ``options``: role -> build options (e.g.
        ``allow_download``, engine overrides) passed to ``build_model``; ``cache``: built models
        shared with other runtimes (default: the process's, :func:`default_cache`)."""
        self.config = config
        self._profiles: dict[str, str | ModelProfile] = dict(profiles or {})
        self._options: dict[str, dict[str, Any]] = {r: dict(o) for r, o in (options or {}).items()}
        self.cache = cache if cache is not None else default_cache()
        self._lock = threading.Lock()
        for role, obj in (overrides or {}).items():
            self.provide(role, obj)

    # -- which profile -----------------------------------------------------------------------------
    def profile(self, role: str) -> str | ModelProfile:
        """The profile ``role`` uses: the one set for this runtime, else the config's, else "none"."""
        if role in self._profiles:
            return self._profiles[role]
        if self.config is not None and role in CONFIG_ROLES:
            return getattr(self.config, role) or NO_MODEL
        return NO_MODEL

    def profile_name(self, role: str) -> str:
        return _key(self.profile(role))

    def use_profile(self, role: str, profile: str | ModelProfile | None) -> None:
        """Use ``profile`` for ``role`` from now on (None: back to the config's)."""
        with self._lock:
            if profile is None:
                self._profiles.pop(role, None)
            else:
                self._profiles[role] = profile

    def provide(self, role: str, model: Any, profile: str | None = None) -> None:
        """Use an already built ``model`` for ``role`` (under ``profile``, default: its ``name``)."""
        name = profile or str(getattr(model, "name", "") or f"provided-{role}")
        with self.cache.lock:
            self.cache.built[(role, name)] = model
        with self._lock:
            self._profiles[role] = name

    # -- the models --------------------------------------------------------------------------------
    def get(self, role: str, profile: str | ModelProfile | None = None) -> Any:
        """The model of ``role`` under ``profile`` (default: the role's); None for "none". Built once."""
        profile = self.profile(role) if profile is None else profile
        if is_no_model(profile):
            return None
        return self.cache.get_or_build(role, profile, self._options.get(role, {}))

    @property
    def builds(self) -> list[tuple[str, str]]:
        """(role, profile) of every model built so far, in order (shared with runtimes on the same cache)."""
        return list(self.cache.builds)

    chat = _role_model("chat")
    embedder = _role_model("embedder")
    multivector = _role_model("multivector")
    ocr = _role_model("ocr")

    def has(self, role: str) -> bool:
        """Whether ``role`` has a model profile (without building it)."""
        return not is_no_model(self.profile(role))


def runtime_report() -> dict[str, Any]:
    """What this process built (every runtime together) and what its chat models' calls used.

    ``builds``: one entry per model built, in order: two chat entries mean two engines; ``runtime``
    where the backend says what runs it (the embedder: "openvino (bf16)" or "torch").
    ``chat``: per chat profile, its :class:`~trident_local.models.metered.ChatUsage` (context,
    counter, tokens, refused and lowered requests).
    """
    with _PROCESS_LOCK:
        built = list(_PROCESS_BUILDS)
    return {
        "builds": [{"role": role, "profile": profile, **({"runtime": rt} if rt else {})}
                   for role, profile, _, rt in built],
        "chat": {profile: u.to_dict() for _, profile, u, _ in built if u is not None},
    }
