"""The FastAPI application: settings -> engine, keys, jobs, metrics, API routes and the web page."""

from __future__ import annotations

import json
import logging
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from trident_local.docs.ingest import IngestCancelled, IngestControl
from trident_local.errors import StorageFull, TridentError
from trident_local.models.batcher import BatchPolicy
from trident_local.models.runtime import ModelCache
from trident_local.serve.auth import KeyStore
from trident_local.serve.engine import Ambiguous, Busy, Engine, NotFound
from trident_local.serve.errors import OPENAI_PREFIX, error_body
from trident_local.serve.gate import Gate, QueueFull
from trident_local.serve.guard import BrowserGuard
from trident_local.serve.jobs import Job, JobFile, JobManager
from trident_local.serve.metrics import Metrics
from trident_local.serve.settings import Settings
from trident_local.serve.storage import FULL_ERRNOS, make_private
from trident_local.serve.uploads import clean_partials, remove_orphans, remove_upload
from trident_local.serve.validate import REFUSED

STATIC = Path(__file__).parent / "static"
log = logging.getLogger("trident_local.serve")
FULL_RETRY_S = 60  # Retry-After of a 507: space is freed by a person, not in a moment


def error(status: int, message: str, headers: dict[str, str] | None = None, request: Request | None = None, *,
          path: str = "", param: str | None = None, code: str | None = None, **extra: Any) -> JSONResponse:
    """The error response for ``request`` (or ``path``): see :func:`~trident_local.serve.errors.error_body`."""
    where = request.url.path if request is not None else path
    return JSONResponse(error_body(status, message, where, param=param, code=code, **extra), status_code=status,
                        headers=headers)


def _named(e: Exception) -> dict[str, Any]:
    """The request field and error code an exception names (openai_compat's errors do), for OpenAI's shape."""
    return {"param": getattr(e, "param", None), "code": getattr(e, "code", None)}


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: easy to ship to any log store."""

    def format(self, record: logging.LogRecord) -> str:
        d = {"ts": round(record.created, 3), "level": record.levelname, "logger": record.name,
             "msg": record.getMessage()}
        d.update(getattr(record, "fields", {}))
        if record.exc_info:
            d["exc"] = self.formatException(record.exc_info)
        return json.dumps(d, ensure_ascii=False)


def _is_upload(scope: dict) -> bool:
    return scope["method"] == "POST" and scope["path"].endswith("/documents")


class Observe:
    """ASGI middleware: body size limit, request metrics and one structured log line per request."""

    def __init__(self, app: Any, metrics: Metrics, max_json: int):
        self.app, self.metrics, self.max_json = app, metrics, max_json

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        status = {"code": 500}
        headers = dict(scope.get("headers") or [])
        ctype = headers.get(b"content-type", b"").decode("latin-1")
        length = headers.get(b"content-length", b"")
        upload = _is_upload(scope) and ctype.startswith("multipart/")  # uploads have their own limits
        if not upload and length.isdigit() and int(length) > self.max_json:
            resp = error(413, f"request body is larger than the limit of {self.max_json // 1024} kB",
                         path=scope["path"])
            status["code"] = 413
            await resp(scope, receive, send)
        else:
            if not upload and not length:  # chunked: read it here (at most the limit), then replay it
                body, more = b"", True
                while more:
                    message = await receive()
                    if message["type"] != "http.request":
                        return
                    body += message.get("body", b"")
                    more = message.get("more_body", False)
                    if len(body) > self.max_json:
                        status["code"] = 413
                        await error(413, f"request body is larger than the limit of {self.max_json // 1024} kB",
                                    path=scope["path"])(scope, receive, send)
                        return self._observe(scope, status, t0)
                replay = [{"type": "http.request", "body": body, "more_body": False}]

                async def receive_buffered() -> dict:
                    return replay.pop() if replay else await receive()

                app_receive = receive_buffered
            else:
                app_receive = receive

            started = False

            async def send_wrapped(message: dict) -> None:
                nonlocal started
                if message["type"] == "http.response.start":
                    status["code"], started = message["status"], True
                await send(message)

            try:
                await self.app(scope, app_receive, send_wrapped)
            except Exception:
                # Answered here, inside the browser guard, so a 500 carries the security headers,
                # is counted and gets its request line like any other answer.
                log.exception("internal error", extra={"fields": {"path": scope["path"]}})
                status["code"] = 500
                if started:
                    self._observe(scope, status, t0)
                    raise
                exc = sys.exc_info()[1]
                await error(500, f"internal error ({type(exc).__name__}); see the server log",
                            path=scope["path"])(scope, receive, send_wrapped)
        self._observe(scope, status, t0)

    def _observe(self, scope: dict, status: dict, t0: float) -> None:
        route = getattr(scope.get("route"), "path", "unmatched")
        dt = time.perf_counter() - t0
        self.metrics.requests.labels(scope["method"], route, str(status["code"])).inc()
        self.metrics.latency.labels(route).observe(dt)
        log.info("request", extra={"fields": {"method": scope["method"], "route": route, "path": scope["path"],
                                              "status": status["code"], "ms": round(dt * 1000, 1)}})


def create_app(settings: Settings) -> FastAPI:
    """Build the service. Refuses to start on a non-loopback address without an API key."""
    settings.check_exposure()
    keys = KeyStore(settings.resolved_keys_file, settings.api_key)
    if not settings.loopback and not keys.enabled:
        raise TridentError(f"binding {settings.host} (not loopback) needs an API key: set TRIDENT_API_KEY")
    metrics = Metrics.create()
    # One engine per chat profile in this process, shared by every index, request thread and job:
    # a vllm profile runs on vLLM's async engine, which batches concurrent callers continuously; a
    # backend without batching of its own gets the batcher (see models/runtime.py ModelCache).
    cache = ModelCache(concurrent={"chat": BatchPolicy(settings.batch_max, settings.batch_wait_ms)},
                       on_batch=lambda role, n: metrics.batch_size.labels(role).observe(n))
    engine = Engine(settings.indexes, settings.data_dir, settings.chat, cache, settings.page_cache_mb)
    for h in engine.handles.values():
        clean_partials(h.path)
        make_private(h.path)  # umask 077 from here on, and what was written before made private
    if settings.data_dir:
        make_private(Path(settings.data_dir))

    def run_index(job: Job, f: JobFile) -> None:
        def page_read(n: int) -> None:
            f.pages_read = n
            if n % 10 == 0:
                job_changed(job)

        control = IngestControl(should_stop=lambda: job.cancel_requested, on_page=page_read,
                                ocr_max_pages=settings.ocr_max_pages)
        try:
            res = engine.index_file(job.index, f.path, control)
        except IngestCancelled as e:
            f.status, f.error = "cancelled", str(e)
            return
        f.doc_id = res.doc_id or f.doc_id
        f.pages = res.pages or f.pages
        f.status = {"indexed": "done", "resumed": "done", "skipped": "skipped"}.get(res.status, "failed")
        f.error = engine.scrub(res.error.replace(f.path, f.name))
        if f.status == "done":
            metrics.pages_indexed.inc(f.pages)

    def run_annotate(job: Job, f: JobFile) -> None:
        pages, err = engine.annotate_doc(job.index, f.doc_id)
        f.status, f.error = ("failed", err) if err else ("done", "")

    def job_changed(_: Job) -> None:
        states: dict[str, int] = {}
        for j in jobs.jobs.values():
            states[j.state] = states.get(j.state, 0) + 1
        for s in ("queued", "running", "done", "failed", "cancelled"):
            metrics.jobs.labels(s).set(states.get(s, 0))
        active = [j for j in jobs.jobs.values() if j.state in ("queued", "running")]
        metrics.job_pages.labels("done").set(sum(j.pages_done for j in active))
        metrics.job_pages.labels("total").set(sum(j.pages_total for j in active))

    def drop_unindexed(job: Job) -> None:
        """A cancelled or failed upload is removed, so the same file can be uploaded again."""
        if job.kind != "index":
            return
        dropped = [f.doc_id for f in job.files if f.status in ("cancelled", "failed") and f.doc_id]
        if dropped:
            indexed = engine.doc_ids(job.index) | jobs.active_doc_ids(job.index)
            for doc_id in dropped:
                if doc_id not in indexed:
                    remove_upload(engine.handle(job.index).path, doc_id)

    jobs = JobManager({n: h.path for n, h in engine.handles.items()},
                      {"index": run_index, "annotate": run_annotate},
                      pause_s=settings.index_pause_s, on_change=job_changed, on_finish=drop_unindexed)
    for name, h in engine.handles.items():  # uploads a crash or an older version left without a job
        gone = remove_orphans(h.path, engine.doc_ids(name) | jobs.active_doc_ids(name))
        if gone:
            log.info("removed uploads that no job will index", extra={"fields": {"index": name, "doc_ids": gone}})

    from trident_local.serve import workers as worker_pool

    n_workers = settings.ask_workers if settings.ask_workers >= 0 else worker_pool.auto_workers(settings.model_slots)
    workers = worker_pool.Workers(n_workers, settings.chat, {n: str(h.path) for n, h in engine.handles.items()})

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        jobs.start()
        if workers.wanted(engine.handles.values()):
            workers.start()
        log.info("started", extra={"fields": {"indexes": list(engine.handles), "host": settings.host,
                                              "auth": keys.enabled}})
        yield
        jobs.stop(settings.drain_s)  # SIGTERM: the current file finishes, the rest stays queued
        workers.close()
        cache.close()
        log.info("stopped")

    # The spec needs a read key (routes.py); the UIs are off unless asked for, served from local files.
    app = FastAPI(title="trident serve", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None, description="Question answering over indexed PDFs with page-accurate citations.")
    app.state.settings, app.state.engine, app.state.keys = settings, engine, keys
    app.state.jobs, app.state.metrics, app.state.workers = jobs, metrics, workers
    app.state.gate = Gate(settings.model_slots, settings.model_queue, settings.retry_after_s)
    app.add_middleware(Observe, metrics=metrics, max_json=int(settings.max_json_kb * 1024))
    app.add_middleware(BrowserGuard, hosts=settings.served_hosts, origins=settings.cors_origins,
                       docs_paths=("/docs", "/redoc") if settings.api_docs else ())
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins,
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"])

    @app.exception_handler(NotFound)
    async def _not_found(r: Request, e: NotFound) -> JSONResponse:
        return error(404, str(e), request=r, **_named(e))

    @app.exception_handler(Ambiguous)
    async def _ambiguous(r: Request, e: Ambiguous) -> JSONResponse:
        return error(409, str(e), request=r, **_named(e))

    @app.exception_handler(Busy)
    async def _busy(r: Request, e: Busy) -> JSONResponse:
        return error(409, str(e), request=r)

    @app.exception_handler(TridentError)
    async def _user_error(r: Request, e: TridentError) -> JSONResponse:
        return error(400, str(e), request=r, **_named(e))

    @app.exception_handler(QueueFull)
    async def _full(r: Request, e: QueueFull) -> JSONResponse:
        metrics.rejected.inc()
        return error(429, str(e), headers={"Retry-After": str(e.retry_after)}, request=r)

    @app.exception_handler(RequestValidationError)
    async def _invalid(r: Request, e: RequestValidationError) -> JSONResponse:
        errs = e.errors()
        if any(x.get("type") == "json_invalid" for x in errs):
            return error(400, "malformed JSON body", request=r)
        refused = [x for x in errs if x.get("type") in REFUSED]
        if refused:  # text no file or tokenizer can take, nesting too deep: the request is bad, not its shape
            return error(400, str(refused[0].get("msg")), request=r)
        fields = [".".join(str(p) for p in x.get("loc", ()) if p != "body") for x in errs]
        parts = [f"{f}: {x.get('msg')}" for f, x in zip(fields, errs, strict=True)]
        # OpenAI answers a body it cannot use with 400 invalid_request_error (its SDKs: BadRequestError)
        status = 400 if r.url.path.startswith(OPENAI_PREFIX) else 422
        return error(status, "invalid request: " + "; ".join(parts), request=r, param=(fields or [None])[0])

    @app.exception_handler(StarletteHTTPException)
    async def _http(r: Request, e: StarletteHTTPException) -> JSONResponse:
        return error(e.status_code, str(e.detail), headers=getattr(e, "headers", None), request=r)

    @app.exception_handler(StorageFull)
    async def _full_volume(r: Request, e: StorageFull) -> JSONResponse:
        log.error("storage full", extra={"fields": {"path": r.url.path, "error": str(e)}})
        return error(507, engine.scrub(str(e)), headers={"Retry-After": str(FULL_RETRY_S)}, request=r)

    @app.exception_handler(OSError)
    async def _os_error(r: Request, e: OSError) -> JSONResponse:
        if e.errno not in FULL_ERRNOS:  # a volume or quota out of space: 507, not 500
            raise e
        log.error("storage full", extra={"fields": {"path": r.url.path, "error": str(e)}})
        return error(507, "the index volume is full (no space left on device): nothing was changed; free "
                     "space on the server and retry", headers={"Retry-After": str(FULL_RETRY_S)}, request=r)

    @app.exception_handler(Exception)
    async def _internal(r: Request, e: Exception) -> JSONResponse:
        log.exception("internal error")
        return error(500, f"internal error ({type(e).__name__}); see the server log", request=r)

    from trident_local.serve.openai_compat import router as openai_router
    from trident_local.serve.routes import router

    app.include_router(router)
    app.include_router(openai_router)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if settings.api_docs:
        from trident_local.serve.api_docs import mount_api_docs

        mount_api_docs(app)
    return app


def configure_logging(json_lines: bool = True) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter() if json_lines else logging.Formatter("%(levelname)s %(message)s"))
    root = logging.getLogger("trident_local")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
