"""HTTP routes. Each handler checks the key's scope, then calls the engine (the library adapter)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import fields
from typing import Any, Literal, get_type_hints

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import Field, create_model

from trident_local.errors import TridentError
from trident_local.generate.ask import AskOptions
from trident_local.serve.auth import ApiKey
from trident_local.serve.engine import NotFound, public_doc
from trident_local.serve.jobs import ACTIVE, Job, JobFile
from trident_local.serve.storage import check_space
from trident_local.serve.uploads import UploadError, receive_pdfs, remove_upload
from trident_local.serve.validate import Body, check_encodable, check_text

router = APIRouter()


# -- auth -----------------------------------------------------------------------------------------------
class Denied(Exception):
    pass


def caller_key(request: Request, scope: str, index: str | None = None) -> ApiKey | None:
    """The caller's Bearer key, checked for ``scope`` on ``index`` (None: no index); None when keys are off.

    Routes whose index is not a path parameter (the OpenAI-compatible ones) call this directly.
    """
    keys = request.app.state.keys
    if not keys.enabled:
        return None
    auth = request.headers.get("authorization", "")
    if not auth.lower().startswith("bearer ") or not auth[7:].strip():
        raise _HTTP(401, "missing API key: send 'Authorization: Bearer <key>'", {"WWW-Authenticate": "Bearer"})
    key = keys.check(auth[7:].strip())
    if key is None:
        raise _HTTP(401, "invalid API key", {"WWW-Authenticate": "Bearer"})
    if not key.allows(scope, index):
        raise _HTTP(403, f"this key ({key.scope}) may not {scope}" + (f" index {index!r}" if index else ""))
    return key


def require(scope: str) -> Callable[[Request], ApiKey | None]:
    """Dependency: the caller's key must have ``scope`` (and the path's index, if any)."""

    def check(request: Request) -> ApiKey | None:
        return caller_key(request, scope, request.path_params.get("index"))

    return check


def _HTTP(status: int, msg: str, headers: dict[str, str] | None = None) -> Exception:
    from fastapi import HTTPException

    return HTTPException(status, msg, headers)


def _job_access(request: Request, key: ApiKey | None, job_id: str, scope: str) -> Job:
    job = request.app.state.jobs.get(job_id)
    if job is None:
        raise NotFound(f"no job {job_id!r}")
    if key is not None and not key.allows(scope, job.index):
        raise _HTTP(403, f"this key may not {scope} index {job.index!r}")
    return job


def _engine(request: Request) -> Any:
    return request.app.state.engine


# -- operations -------------------------------------------------------------------------------------------
@router.get("/health", tags=["operations"])
async def health() -> dict:
    """On the event loop itself: never queued behind work in the thread pool."""
    return {"status": "ok"}


@router.head("/health", include_in_schema=False)
async def health_head() -> Response:
    """Uptime checks that send HEAD."""
    return Response()


@router.get("/ready", tags=["operations"], dependencies=[Depends(require("read"))])
def ready(request: Request) -> JSONResponse:
    engine, jobs = request.app.state.engine, request.app.state.jobs
    problems = []
    for name, h in engine.handles.items():
        if not (h.path / "manifest.json").exists():
            problems.append(f"index {name}: manifest missing")
    if not jobs.alive:
        problems.append("job worker not running")
    return JSONResponse({"ready": not problems, "problems": problems,
                         "models": [list(b) for b in engine.cache.builds]},  # engines built in this process
                        status_code=503 if problems else 200)


@router.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require("read"))])
def openapi_spec(request: Request) -> JSONResponse:
    """The OpenAPI spec: it names every index route, so it needs a key like they do."""
    return JSONResponse(request.app.openapi())


@router.get("/metrics", tags=["operations"], dependencies=[Depends(require("read"))])
def metrics(request: Request) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    request.app.state.metrics.queue_depth.set(request.app.state.gate.admitted)
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)


# -- indexes ------------------------------------------------------------------------------------------------
class NewIndex(Body):
    name: str = Field(max_length=64)
    config: dict[str, Any] = Field(default_factory=dict)


@router.get("/api/indexes", tags=["indexes"])
def list_indexes(request: Request, key: ApiKey | None = Depends(require("read"))) -> dict:
    names = [n for n in _engine(request).handles if key is None or key.allows("read", n)]
    return {"indexes": [_engine(request).index_info(n) for n in names]}


@router.post("/api/indexes", tags=["indexes"], status_code=201, dependencies=[Depends(require("admin"))])
def create_index(request: Request, body: NewIndex) -> dict:
    h = _engine(request).create_index(body.name, body.config)
    request.app.state.jobs.add_index(h.name, h.path)
    return _engine(request).index_info(h.name)


@router.get("/api/indexes/{index}", tags=["indexes"], dependencies=[Depends(require("read"))])
def index_info(request: Request, index: str) -> dict:
    return _engine(request).index_info(index)


# -- documents ---------------------------------------------------------------------------------------------
@router.get("/api/indexes/{index}/documents", tags=["documents"], dependencies=[Depends(require("read"))])
def list_documents(request: Request, index: str) -> dict:
    return {"documents": [public_doc(d) for d in _engine(request).documents(index)]}


@router.post("/api/indexes/{index}/documents", tags=["documents"], status_code=202,
             dependencies=[Depends(require("write"))])
async def upload(request: Request, index: str) -> JSONResponse:
    """Multipart field ``file`` (repeatable). Stored files are indexed by a background job."""
    engine, settings, jobs = _engine(request), request.app.state.settings, request.app.state.jobs
    h = engine.handle(index)
    length = request.headers.get("content-length", "")
    check_space(h.path, f"index '{index}'", "receiving an upload", int(length) if length.isdigit() else 0)
    indexed = await run_in_threadpool(engine.doc_ids, index)
    queued: list[Job] = []

    def commit(stored: list) -> None:
        files = [JobFile(s.name, s.path, s.doc_id, s.pages) for s in stored if s.status == "stored"]
        if files:
            queued.append(jobs.submit(index, "index", files))

    try:
        stored = await receive_pdfs(request, h.path, max_file=int(settings.max_upload_mb * 1024**2),
                                    max_request=int(settings.max_request_mb * 1024**2),
                                    known=lambda: indexed | jobs.active_doc_ids(index), check=engine.check_pdf,
                                    commit=commit, lock=jobs.lock)
    except UploadError as e:
        return JSONResponse({"error": str(e), "status": e.status}, status_code=e.status)
    job = queued[0] if queued else None
    body = {"files": [s.public() for s in stored], "job": job.public() if job else None}
    rejected = [s for s in stored if s.status == "rejected"]
    if rejected and len(rejected) == len(stored):
        codes = {s.http_status for s in rejected}
        status = codes.pop() if len(codes) == 1 else 422
        return JSONResponse({"error": "; ".join(f"{s.name}: {s.error}" for s in rejected), "status": status,
                             **body}, status_code=status)
    return JSONResponse(body, status_code=202 if job else 200)


@router.get("/api/indexes/{index}/documents/{doc}", tags=["documents"], dependencies=[Depends(require("read"))])
def get_document(request: Request, index: str, doc: str) -> dict:
    return public_doc(_engine(request).document(index, doc))


@router.delete("/api/indexes/{index}/documents/{doc}", tags=["documents"], dependencies=[Depends(require("write"))])
def delete_document(request: Request, index: str, doc: str) -> dict:
    engine = _engine(request)
    root = engine.handle(index).path
    try:
        doc_id = engine.remove(index, doc)
    except NotFound:  # an upload that never reached the index (no job will index it) can still go
        if doc in request.app.state.jobs.active_doc_ids(index) or not remove_upload(root, doc):
            raise
        return {"deleted": doc}
    remove_upload(root, doc_id)
    return {"deleted": doc_id}


@router.get("/api/indexes/{index}/documents/{doc}/pages/{page}.png", tags=["documents"],
            dependencies=[Depends(require("read"))])
async def page_png(request: Request, index: str, doc: str, page: int,
             scale: int = Query(1, ge=1, le=3, description="Resolution: 1 = the index's DPI; 2 or 3 for "
                                "high-DPI screens and zooming in on a cell.")) -> FileResponse:
    """A kept image is sent at once; drawing one waits its turn at the model queue like other work."""
    engine = _engine(request)
    path = await run_in_threadpool(engine.page_png, index, doc, page, scale, render=False)
    if path is None:
        async with request.app.state.gate.slot():
            path = await run_in_threadpool(engine.page_png, index, doc, page, scale)
    return FileResponse(path, media_type="image/png")


@router.get("/api/indexes/{index}/documents/{doc}/pages/{page}/boxes", tags=["documents"],
            dependencies=[Depends(require("read"))])
def page_boxes(request: Request, index: str, doc: str, page: int, text: str = "") -> dict:
    """Blocks and objects on the page that match ``text`` (PDF points; page width/height given)."""
    return _engine(request).page_boxes(index, doc, page, text[:4000])


# -- queries -----------------------------------------------------------------------------------------------
class SearchBody(Body):
    question: str
    docs: list[str] | None = None
    pool: str = "fused"
    k: int = Field(10, ge=1, le=200)
    finders: str = "all"  # lead-page finders: all | none | a comma list of names


BOUNDS = {"k_max": {"ge": 1, "le": 50}}
_HINTS = get_type_hints(AskOptions)
# The ask options a request may set, built from AskOptions (same names, types, defaults: one rule for the
# CLI, the API and the service, rerank "auto" included); names are
# checked by AskOptions against the registries, so a newly registered pool or reranker is accepted
# and a wrong one is a 400 that lists them.
AskOptionsBody = create_model("AskOptionsBody", __base__=Body, **{
    f.name: (_HINTS[f.name], Field(f.default, **BOUNDS.get(f.name, {})))
    for f in fields(AskOptions) if f.name in ("pool", "rerank", "fields", "answer", "k_max", "finders")})


class AskBody(AskOptionsBody):
    question: str
    docs: list[str] | None = None
    min_confidence: float | None = Field(None, ge=0.0, le=1.0)  # no-model answers' abstention threshold

    def options(self) -> AskOptions:
        """The library's options (TridentError, a 400, for a name no registry holds)."""
        return AskOptions(**{n: getattr(self, n) for n in AskOptionsBody.model_fields})


class VerifyBody(Body):
    answer: str | dict[str, Any]
    doc: str
    window: int = Field(2, ge=0, le=10)


class TraceBody(Body):
    question: str
    format: Literal["free_form", "multiple_choice", "table"] = "free_form"
    choices: list[str] = Field(default_factory=list, max_length=26)
    papers: list[str] | None = None


def _check_question(request: Request, q: str, docs: list[str] | None = None) -> None:
    check_text("question", q, request.app.state.settings.max_question_chars)
    check_encodable("document list", docs or [])


@router.post("/api/indexes/{index}/search", tags=["query"], dependencies=[Depends(require("read"))])
async def search(request: Request, index: str, body: SearchBody) -> dict:
    _check_question(request, body.question, body.docs)
    hits = await run_in_threadpool(request.app.state.workers.call, _engine(request), "search", index,
                                   body.question, docs=body.docs, pool=body.pool, k=body.k, finders=body.finders)
    return {"hits": hits}


@router.post("/api/indexes/{index}/ask", tags=["query"], dependencies=[Depends(require("read"))])
async def ask(request: Request, index: str, body: AskBody) -> dict:
    """The CLI's `ask --json` result, plus evidence boxes per citation and what produced each part."""
    _check_question(request, body.question, body.docs)
    m = request.app.state.metrics
    options = body.options()
    async with request.app.state.gate.slot():
        out = await run_in_threadpool(request.app.state.workers.call, _engine(request), "ask", index,
                                      body.question, options, docs=body.docs, min_confidence=body.min_confidence)
    m.answers.labels(out["answer"]["mode"]).inc()
    if out["rerank"].get("fallback"):
        m.fallbacks.inc()
    return out


@router.post("/api/indexes/{index}/verify", tags=["query"], dependencies=[Depends(require("read"))])
async def verify(request: Request, index: str, body: VerifyBody) -> dict:
    check_text("answer", body.answer, request.app.state.settings.max_answer_chars)
    check_encodable("document", body.doc)
    async with request.app.state.gate.slot():
        out = await run_in_threadpool(_engine(request).verify, index, body.answer, body.doc, window=body.window)
    request.app.state.metrics.model_calls.inc(out.get("model_calls", 0))
    return out


@router.post("/api/indexes/{index}/trace", tags=["query"], dependencies=[Depends(require("read"))])
async def trace(request: Request, index: str, body: TraceBody) -> dict:
    _check_question(request, body.question, body.papers)
    async with request.app.state.gate.slot():
        return await run_in_threadpool(_engine(request).trace, index, body.question, answer_format=body.format,
                                       choices=body.choices, papers=body.papers)


# -- jobs ----------------------------------------------------------------------------------------------------
class AnnotateBody(Body):
    docs: list[str] | None = None


@router.post("/api/indexes/{index}/annotate", tags=["jobs"], status_code=202, dependencies=[Depends(require("write"))])
def annotate(request: Request, index: str, body: AnnotateBody) -> dict:
    engine = _engine(request)
    docs = engine.documents(index)
    if body.docs:
        with engine.reading(index) as idx:
            wanted = {engine._resolve(idx, d) for d in body.docs}
        docs = [d for d in docs if d["doc_id"] in wanted]
    files = [JobFile(d["file_name"], d["path"], d["doc_id"], d["n_pages"]) for d in docs]
    if not files:
        raise TridentError("no documents to annotate")
    check_space(engine.handle(index).path, f"index '{index}'", "starting an annotation job")
    return request.app.state.jobs.submit(index, "annotate", files).public()


@router.get("/api/jobs", tags=["jobs"])
def list_jobs(request: Request, index: str | None = None, key: ApiKey | None = Depends(require("read"))) -> dict:
    jobs = request.app.state.jobs.list(index)
    return {"jobs": [j.public() for j in jobs if key is None or key.allows("read", j.index)]}


@router.get("/api/jobs/{job_id}", tags=["jobs"])
def get_job(request: Request, job_id: str, key: ApiKey | None = Depends(require("read"))) -> dict:
    return _job_access(request, key, job_id, "read").public()


@router.post("/api/jobs/{job_id}/cancel", tags=["jobs"])
def cancel_job(request: Request, job_id: str, key: ApiKey | None = Depends(require("write"))) -> dict:
    _job_access(request, key, job_id, "write")
    return request.app.state.jobs.cancel(job_id).public()


@router.get("/api/jobs/{job_id}/events", tags=["jobs"])
async def job_events(request: Request, job_id: str, key: ApiKey | None = Depends(require("read"))) -> StreamingResponse:
    """Server-sent events: the job as JSON whenever it changes, until it ends."""
    job = _job_access(request, key, job_id, "read")

    async def stream():
        last = None
        while True:
            d = job.public()
            snap = json.dumps(d, sort_keys=True)
            if snap != last:
                yield f"event: progress\ndata: {snap}\n\n"
                last = snap
            if job.state not in ACTIVE:
                yield f"event: end\ndata: {snap}\n\n"
                return
            if await request.is_disconnected():
                return
            await asyncio.sleep(0.5)

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


# -- keys ------------------------------------------------------------------------------------------------------
class NewKey(Body):
    scope: Literal["read", "write", "admin"]
    indexes: list[str] = Field(default_factory=lambda: ["*"])
    label: str = Field("", max_length=200)


@router.get("/api/keys", tags=["keys"], dependencies=[Depends(require("admin"))])
def list_keys(request: Request) -> dict:
    return {"keys": [k.public() for k in request.app.state.keys.list()]}


@router.post("/api/keys", tags=["keys"], status_code=201, dependencies=[Depends(require("admin"))])
def create_key(request: Request, body: NewKey) -> dict:
    secret, k = request.app.state.keys.create(body.scope, body.indexes, body.label)
    return {"key": secret, **k.public(), "note": "shown once; only its hash is stored"}


@router.delete("/api/keys/{key_id}", tags=["keys"], dependencies=[Depends(require("admin"))])
def delete_key(request: Request, key_id: str) -> dict:
    if not request.app.state.keys.delete(key_id):
        raise NotFound(f"no key {key_id!r} (the start-up key cannot be deleted)")
    return {"deleted": key_id}
