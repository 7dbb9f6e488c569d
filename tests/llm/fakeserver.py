"""A small, real OpenAI-compatible HTTP server on loopback, for tests.

It speaks just enough of the API to play a turn: `GET /v1/models`, streamed (SSE) and
plain `POST /v1/chat/completions` and `/v1/completions`; `extra` routes answer fixed JSON,
so a test can make it look like a llama.cpp server (`GET /props`), Ollama
(`POST /api/show`) or LM Studio (`GET /api/v0/models/NAME`); `model_fields` adds fields
to the `/v1/models` entries (vLLM's `max_model_len`). Each test says what the model
"answers" with `FakeReply`s (queued in order, or computed from the request), and every
request is recorded for assertions. A reply can also misbehave like real servers do:
drop the connection mid-stream, stall, omit `[DONE]`, answer an HTTP error, or wait on
a `threading.Event` so a test can hold a generation in flight, or keep the stream
open after `[DONE]`. `connections` counts the TCP connections accepted, so a test can
see whether the client reused one.

    with FakeOpenAIServer(["You open the door."]) as server:
        provider = OpenAIProvider(server.url, "fake-model")
        ...
        assert server.generation_requests[0].body["messages"][-1]["content"] == ...

or use the `fake_openai_server` fixture and `server.queue(...)`.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests import waiting


@dataclass
class FakeReply:
    """What the fake model answers to one generation request."""

    text: str = ""
    reasoning: str = ""  # streamed first, as delta.<reasoning_field> (chat mode)
    reasoning_field: str = "reasoning_content"
    chunk_size: int = 5  # characters per streamed chunk
    finish_reason: str | None = "stop"  # None: never say why it stopped
    send_done: bool = True  # end the stream with `data: [DONE]`
    cut_after_chunks: int | None = None  # drop the connection after N text chunks
    delay: float = 0.0  # seconds before each text chunk
    gate: threading.Event | None = None  # wait for it after the first text chunk
    linger: float = 0.0  # seconds the body stays open after `[DONE]`, a ": ping" each 0.05 s
    usage: tuple[int, int] | None = (10, 5)  # (prompt_tokens, completion_tokens)
    status: int = 200
    error: str | None = None  # message of the error body when status >= 400


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None  # parsed JSON, or None


ReplySource = Callable[[RecordedRequest], "FakeReply | str"]


@dataclass
class _State:
    replies: list[FakeReply | str] = field(default_factory=list)
    reply_fn: ReplySource | None = None
    models: list[str] = field(default_factory=lambda: ["fake-model"])
    strict_models: bool = False
    extra: dict[tuple[str, str], Any] = field(default_factory=dict)
    model_fields: dict[str, Any] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    record: bool = True
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeOpenAIServer:
    """Serves on 127.0.0.1 at a free port in a background thread."""

    def __init__(
        self,
        replies: list[FakeReply | str] | ReplySource | None = None,
        *,
        models: list[str] | None = None,
        strict_models: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        extra: dict[tuple[str, str], Any] | None = None,
        model_fields: dict[str, Any] | None = None,
        record: bool = True,
    ) -> None:
        """
        replies: consumed one per generation request; or a function of the request.
        models: what /v1/models lists.
        strict_models: answer 404 "model not found" (as Ollama and vLLM do) for a
            generation request naming a model not in `models`.
        ssl_context: serve HTTPS with this (server-side) context.
        extra: (method, path) → the JSON answered there, e.g. `{("GET", "/props"): {...}}`.
        model_fields: added to every `/v1/models` entry.
        record: keep every request for `requests` (a long benchmark does not).
        """
        self._state = _State(
            strict_models=strict_models,
            extra=dict(extra or {}),
            model_fields=dict(model_fields or {}),
            record=record,
        )
        if callable(replies):
            self._state.reply_fn = replies
        elif replies:
            self._state.replies.extend(replies)
        if models is not None:
            self._state.models = list(models)
        self._ssl_context = ssl_context
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- configuration and inspection --------------------------------------------

    def queue(self, *replies: FakeReply | str) -> None:
        with self._state.lock:
            self._state.replies.extend(replies)

    @property
    def models(self) -> list[str]:
        return self._state.models

    @property
    def requests(self) -> list[RecordedRequest]:
        return list(self._state.requests)

    @property
    def generation_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("completions")]

    @property
    def connections(self) -> int:
        """TCP connections accepted so far (a client that keeps its connection alive
        makes one for many requests)."""
        return self._state.connections

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def root(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI base URL, http://127.0.0.1:PORT/v1."""
        return self.root + "/v1"

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        handler = type("Handler", (_Handler,), {"state": self._state})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        if self._ssl_context is not None:
            self._httpd.socket = self._ssl_context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # As llama.cpp's server, Ollama and uvicorn do: with Nagle's algorithm a kept-alive
    # connection's next answer can wait ~40 ms for the client's delayed ACK.
    disable_nagle_algorithm = True
    state: _State

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def setup(self) -> None:  # once per accepted connection
        with self.state.lock:
            self.state.connections += 1
        super().setup()

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionResetError:
            pass  # the client closed a kept-alive connection while it waited for a request

    # --- plumbing --------------------------------------------------------------------

    def _record(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", errors="replace")
        recorded = RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
        if self.state.record:
            with self.state.lock:
                self.state.requests.append(recorded)
        return recorded

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, payload: Any) -> None:
        self._chunk(f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n")

    def _next_reply(self, request: RecordedRequest) -> FakeReply:
        with self.state.lock:
            if self.state.reply_fn is not None:
                reply: FakeReply | str | None = self.state.reply_fn(request)
            elif self.state.replies:
                reply = self.state.replies.pop(0)
            else:
                reply = None
        if reply is None:
            return FakeReply(status=500, error="fake server: no reply queued for this request")
        return FakeReply(text=reply) if isinstance(reply, str) else reply

    # --- routes ----------------------------------------------------------------------

    def do_GET(self) -> None:
        self._record()
        if ("GET", self.path.rstrip("/")) in self.state.extra:
            self._json(200, self.state.extra[("GET", self.path.rstrip("/"))])
        elif self.path.rstrip("/") == "/v1/models":
            data = [
                {"id": m, "object": "model", "owned_by": "fake", **self.state.model_fields}
                for m in self.state.models
            ]
            self._json(200, {"object": "list", "data": data})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        request = self._record()
        path = self.path.rstrip("/")
        if ("POST", path) in self.state.extra:
            self._json(200, self.state.extra[("POST", path)])
            return
        if path not in ("/v1/chat/completions", "/v1/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        body = request.body if isinstance(request.body, dict) else {}
        model = body.get("model")
        if self.state.strict_models and model not in self.state.models:
            message = f"model '{model}' not found"
            self._json(404, {"error": {"message": message, "type": "not_found_error"}})
            return
        reply = self._next_reply(request)
        if reply.status >= 400:
            self._json(
                reply.status, {"error": {"message": reply.error or "error", "type": "error"}}
            )
            return
        chat = path.endswith("chat/completions")
        if body.get("stream"):
            self._stream(reply, chat, str(model))
        else:
            self._whole(reply, chat, str(model))

    def _whole(self, reply: FakeReply, chat: bool, model: str) -> None:
        choice: dict[str, Any] = {"index": 0, "finish_reason": reply.finish_reason}
        if chat:
            choice["message"] = {"role": "assistant", "content": reply.text}
        else:
            choice["text"] = reply.text
        payload: dict[str, Any] = {"id": "fake-1", "model": model, "choices": [choice]}
        if reply.usage:
            payload["usage"] = {
                "prompt_tokens": reply.usage[0],
                "completion_tokens": reply.usage[1],
            }
        self._json(200, payload)

    def _stream(self, reply: FakeReply, chat: bool, model: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        kind = "chat.completion.chunk" if chat else "text_completion"

        def chunk(choice: dict[str, Any], **extra: Any) -> dict[str, Any]:
            return {"id": "fake-1", "object": kind, "model": model, "choices": [choice], **extra}

        def piece(text: str = "", **delta: Any) -> dict[str, Any]:
            if chat:
                return chunk(
                    {
                        "index": 0,
                        "delta": {"content": text, **delta} if text else delta,
                        "finish_reason": None,
                    }
                )
            return chunk({"index": 0, "text": text, "finish_reason": None})

        try:
            if chat:
                self._event(piece(role="assistant"))
                size = reply.chunk_size
                for i in range(0, len(reply.reasoning), size):
                    self._event(piece(**{reply.reasoning_field: reply.reasoning[i : i + size]}))
            pieces = [
                reply.text[i : i + reply.chunk_size]
                for i in range(0, len(reply.text), reply.chunk_size)
            ]
            for index, text in enumerate(pieces):
                if reply.cut_after_chunks is not None and index == reply.cut_after_chunks:
                    self._cut()
                    return
                if reply.delay:
                    time.sleep(reply.delay)
                self._event(piece(text))
                if index == 0 and reply.gate is not None:
                    reply.gate.wait(timeout=waiting.bound(30))
            if reply.cut_after_chunks is not None:
                self._cut()
                return
            if reply.finish_reason is not None:
                final: dict[str, Any] = {"index": 0, "finish_reason": reply.finish_reason}
                final.update({"delta": {}} if chat else {"text": ""})
                self._event(chunk(final))
            if reply.usage:
                usage = {"prompt_tokens": reply.usage[0], "completion_tokens": reply.usage[1]}
                self._event(
                    {"id": "fake-1", "object": kind, "model": model, "choices": [], "usage": usage}
                )
            if reply.send_done:
                self._event("[DONE]")
            lingered = time.monotonic() + reply.linger
            while time.monotonic() < lingered:  # a proxy that keeps the stream alive
                self._chunk(": ping\n\n")
                time.sleep(0.05)
            self._chunk("")  # zero-length chunk: the body is complete
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away; nothing to clean up

    def _cut(self) -> None:
        """Drop the connection the way a crashing server does: no end of body."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


@pytest.fixture
def fake_openai_server() -> Iterator[FakeOpenAIServer]:
    """A running fake server with nothing queued; call `.queue(...)` in the test."""
    with FakeOpenAIServer() as server:
        yield server
