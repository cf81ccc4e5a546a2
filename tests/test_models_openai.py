"""OpenAI-compatible client against real HTTP servers on loopback (no mocked HTTP).

The main server is ours (`trident serve`'s ChatServer) wrapping the transformers
backend on tiny models; small stdlib servers stand in for a failing, slow or
busy remote to check retries, timeouts and the concurrency limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from openai_double import ChatServer
from PIL import Image
from tiny_models import tiny_chat_profile

from trident_local.models.profiles import build_model
from trident_local.models.protocols import (
    ChatModel,
    ChatRequest,
    ChatResult,
    ImagePart,
    Message,
    SamplingParams,
)

SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}


class Recording:
    """A ChatModel that records the batches it is given, then delegates."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = "tiny"
        self.supports_images = inner.supports_images
        self.supports_json_schema = inner.supports_json_schema
        self.batches: list[list[ChatRequest]] = []

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        self.batches.append(list(requests))
        return self.inner.chat(requests)


def client_profile(tmp: Path, base_url: str, **options: object) -> str:
    opts = {"base_url": base_url, "model": "", "backoff_s": 0.01, **options}
    lines = [f"{k} = {json.dumps(v)}" for k, v in opts.items()]
    path = tmp / f"client-{abs(hash(json.dumps(opts, sort_keys=True)))}.toml"
    path.write_text('role = "chat"\nbackend = "openai"\nweights = ""\n[options]\n' + "\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def vlm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChatServer, Recording]]:
    model = Recording(build_model("chat", tiny_chat_profile(tmp_path_factory.mktemp("q"), "qwen25vl")))
    server = ChatServer(model, "127.0.0.1", 0, model_name="tiny", batch_wait_s=0.05)
    server.start_background()
    yield server, model
    server.shutdown()
    server.server_close()


def ask(text: str, n: int = 4) -> ChatRequest:
    return ChatRequest([Message("user", text)], SamplingParams(max_tokens=n))


def test_client_batch_through_our_server(vlm_server, tmp_path: Path) -> None:
    server, model = vlm_server
    client = build_model("chat", client_profile(tmp_path, server.url))
    assert client.model == "tiny"  # asked from /v1/models
    model.batches.clear()
    reqs = [ask("hello"), ask("Revenue grew 12% in 2023", 6), ask("fox", 3), ask("page 14", 5)]
    out = client.chat(reqs)
    assert [r.error for r in out] == [None] * 4
    assert [r.completion_tokens for r in out] == [4, 6, 3, 5] and all(r.prompt_tokens > 0 for r in out)
    assert max(len(b) for b in model.batches) > 1  # concurrent requests were batched server-side
    direct = model.inner.chat(reqs)
    assert [r.text for r in out] == [r.text for r in direct]  # same answers as the backend itself


def test_images_travel_as_data_urls_and_schema_as_response_format(vlm_server, tmp_path: Path) -> None:
    server, model = vlm_server
    # images only when the profile says the served model takes them (the API cannot tell)
    assert not build_model("chat", client_profile(tmp_path, server.url)).supports_images
    client = build_model("chat", client_profile(tmp_path, server.url, supports_images=True))
    page = tmp_path / "page.png"
    Image.new("RGB", (180, 240), "white").save(page)
    req = ChatRequest(
        [
            Message(
                "user", [ImagePart(path=str(page)), ImagePart(Image.new("RGB", (90, 90), "red")), "describe"]
            )
        ],
        SamplingParams(max_tokens=3, stop=["\n\n"]),
        json_schema=SCHEMA,
    )
    body = client.payload(req)
    parts = body["messages"][0]["content"]
    assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    model.batches.clear()
    out = client.chat([req])[0]
    assert out.error is None and out.completion_tokens <= 3
    got = model.batches[-1][0]
    assert got.json_schema == SCHEMA and got.params.stop == ["\n\n"] and got.params.max_tokens == 3
    imgs = got.messages[0].images()
    assert [im.load().size for im in imgs] == [(180, 240), (90, 90)]
    assert out.prompt_tokens == model.inner.chat([got])[0].prompt_tokens


def test_server_rejects_bad_requests_with_4xx_and_client_reports_them(vlm_server, tmp_path: Path) -> None:
    server, _ = vlm_server
    r = httpx.post(f"{server.url}/chat/completions", json={"messages": []})
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    r = httpx.post(
        f"{server.url}/chat/completions",
        json={"model": "other", "messages": [{"role": "user", "content": "x"}]},
    )
    assert r.status_code == 404
    r = httpx.post(
        f"{server.url}/chat/completions",
        json={
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}
            ]
        },
    )
    assert r.status_code == 400 and "data:image" in r.json()["error"]["message"]
    client = build_model("chat", client_profile(tmp_path, server.url, model="other"))
    out = client.chat([ask("hi"), ask("x")])
    assert all(o.error and "HTTP 404" in o.error for o in out)


def test_api_key_is_required_when_set(tmp_path: Path) -> None:
    model = build_model("chat", tiny_chat_profile(tmp_path, "llama"))
    server = ChatServer(model, "127.0.0.1", 0, model_name="tiny", api_key="sekrit")
    server.start_background()
    try:
        assert (
            build_model("chat", client_profile(tmp_path, server.url, model="tiny")).chat([ask("hi")])[0].error
        )
        keyed = build_model("chat", client_profile(tmp_path, server.url, api_key="sekrit"))
        ok = keyed.chat([ask("hi", 2)])[0]
        assert ok.error is None and ok.completion_tokens == 2
    finally:
        server.shutdown()
        server.server_close()


# --- stand-in remotes: flaky, slow, busy --------------------------------------------------------


class Remote(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fail_first: int = 0, status: int = 503, delay_s: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), RemoteHandler)
        self.fail_first, self.status, self.delay_s = fail_first, status, delay_s
        self.posts = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that timed out and hung up is expected here


class RemoteHandler(BaseHTTPRequestHandler):
    server: Remote
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        srv = self.server
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with srv.lock:
            srv.posts += 1
            n = srv.posts
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        try:
            time.sleep(srv.delay_s)
            if n <= srv.fail_first:
                self._json(srv.status, {"error": {"message": f"try again ({n})"}})
            else:
                self._json(
                    200,
                    {
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": "ok"},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                    },
                )
        finally:
            with srv.lock:
                srv.in_flight -= 1


def test_retries_with_backoff_on_5xx_then_succeeds(tmp_path: Path) -> None:
    remote = Remote(fail_first=2, status=503)
    out = build_model("chat", client_profile(tmp_path, remote.url, model="m", max_retries=3)).chat(
        [ask("x")]
    )[0]
    assert (out.text, out.error, out.prompt_tokens, out.completion_tokens) == ("ok", None, 3, 1)
    assert remote.posts == 3


def test_gives_up_after_max_retries_and_never_retries_4xx(tmp_path: Path) -> None:
    remote = Remote(fail_first=100, status=500)
    out = build_model("chat", client_profile(tmp_path, remote.url, model="m", max_retries=2)).chat(
        [ask("x")]
    )[0]
    assert out.error and "gave up after 3 attempts" in out.error and "HTTP 500" in out.error
    assert remote.posts == 3
    remote = Remote(fail_first=100, status=422)
    out = build_model("chat", client_profile(tmp_path, remote.url, model="m", max_retries=5)).chat(
        [ask("x")]
    )[0]
    assert out.error and "HTTP 422" in out.error and remote.posts == 1


def test_timeouts_and_refused_connections_become_per_request_errors(tmp_path: Path) -> None:
    slow = Remote(delay_s=1.0)
    out = build_model(
        "chat", client_profile(tmp_path, slow.url, model="m", timeout_s=0.2, max_retries=1)
    ).chat([ask("x")])
    assert out[0].error and "Timeout" in out[0].error and slow.posts == 2
    dead = client_profile(tmp_path, "http://127.0.0.1:9/v1", model="m", max_retries=1, connect_timeout_s=0.5)
    out = build_model("chat", dead).chat([ask("a"), ask("b")])
    assert len(out) == 2 and all(o.error and "gave up" in o.error for o in out)


def test_concurrency_limit_bounds_requests_in_flight(tmp_path: Path) -> None:
    busy = Remote(delay_s=0.15)
    client = build_model("chat", client_profile(tmp_path, busy.url, model="m", max_concurrency=3))
    out = client.chat([ask(str(i)) for i in range(9)])
    assert [o.text for o in out] == ["ok"] * 9
    assert busy.max_in_flight == 3


@pytest.mark.slow  # a second Python process that imports transformers: ~5 s of CPU
def test_trident_serve_subprocess_end_to_end(tmp_path: Path) -> None:
    """`trident serve` as a real process on a free port; the client talks to it over loopback."""
    prof = tiny_chat_profile(tmp_path, "llama")
    cmd = [
        sys.executable,
        "-c",
        "from trident_local.cli import main; main()",
        "serve",
        "--profile",
        prof,
        "--port",
        "0",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = ""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("READY "):
                url = line.split()[1]
                break
        assert url, proc.stderr.read() if proc.poll() is not None else "server did not start"
        client = build_model("chat", client_profile(tmp_path, url))
        assert client.model == "tiny-llama"
        out = client.chat(
            [ask("hello", 3), ChatRequest([Message("user", [ImagePart(Image.new("RGB", (8, 8))), "x"])])]
        )
        assert out[0].error is None and out[0].completion_tokens == 3
        assert out[1].error and "text only" in out[1].error  # the backend's per-request error, as HTTP 400
    finally:
        proc.terminate()
        proc.wait(timeout=10)
