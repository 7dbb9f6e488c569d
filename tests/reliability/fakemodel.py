"""A small OpenAI-compatible model server on loopback, for the crash and soak tests.

Real HTTP and real SSE, so a `talekeeper serve` subprocess talks to it exactly as it
would to llama.cpp or Ollama. Every reply is unique and recorded in full (`replies`), so
a test can tell a whole narration from a truncated one; chunks are paced
(`chunk_delay`) so there is a "mid-stream" to kill the server in; and `on_finished` is
called the moment a reply's last byte (`[DONE]`) is written, which is when the
talekeeper server starts committing: the test's cue for killing "around the commit";
`on_request` is called as a request arrives (to spot, say, the memory bank's summariser).
A request under a JSON schema (`response_format`: talekeeper's structured state pass) is
answered with `state_answer`, a valid proposal, streamed and paced like any reply.

    with FakeModelServer(chunk_delay=0.01) as fake:
        ... talekeeper serve --endpoint {fake.endpoint} --model fake ...
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SENTENCES = [
    "Rain drums on the ferry's planks.",
    "The lamp gutters, then steadies.",
    "Somewhere upriver a bell answers.",
    "Maren's pole finds the bottom and holds.",
    "Fog gathers in the reeds like wool.",
    "A gull lands on the rail and watches you.",
]


class FakeModelServer:
    def __init__(
        self, *, chunk_delay: float = 0.005, sentences: int = 4, chunk_chars: int = 12
    ) -> None:
        self.chunk_delay = chunk_delay
        self.sentences = sentences
        self.chunk_chars = chunk_chars
        self.replies: dict[int, str] = {}  # request number -> the full reply text
        self.requests: list[dict[str, Any]] = []
        self.finished: set[int] = set()
        self.on_finished: Callable[[int], None] | None = None
        self.on_request: Callable[[int, dict[str, Any]], None] | None = None
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def state_answer(number: int) -> str:
        """A state pass's answer: one real change (the storm rises), valid JSON."""
        return '{"events": [{"type": "change_stat", "stat": "world.storm", "by": 1}]}'

    def compose(self, number: int) -> str:
        body = " ".join(SENTENCES[(number + i) % len(SENTENCES)] for i in range(self.sentences))
        return f"[reply {number}] {body}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                chat = self.path.rstrip("/").endswith("/chat/completions")
                if not chat and not self.path.rstrip("/").endswith("/completions"):
                    self._json(404, {"error": {"message": "not found"}})
                    return
                with fake._lock:
                    number = next(fake._numbers)
                    structured = body.get("response_format") is not None
                    reply = fake.state_answer(number) if structured else fake.compose(number)
                    fake.replies[number] = reply
                    fake.requests.append(body)
                if fake.on_request is not None:
                    fake.on_request(number, body)
                if not body.get("stream"):
                    choice = (
                        {"message": {"role": "assistant", "content": reply}}
                        if chat
                        else {"text": reply}
                    )
                    time.sleep(
                        fake.chunk_delay * len(reply) / fake.chunk_chars
                    )  # as long as a stream
                    try:
                        self._json(
                            200, {"choices": [{"index": 0, **choice, "finish_reason": "stop"}]}
                        )
                    except (BrokenPipeError, ConnectionResetError):
                        return  # the talekeeper server died while it waited
                    fake._finish(number)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    step = fake.chunk_chars
                    for start in range(0, len(reply), step):
                        piece = reply[start : start + step]
                        delta = {"delta": {"content": piece}} if chat else {"text": piece}
                        self._event({"choices": [{"index": 0, **delta, "finish_reason": None}]})
                        time.sleep(fake.chunk_delay)
                    end = {"delta": {}} if chat else {"text": ""}
                    self._event({"choices": [{"index": 0, **end, "finish_reason": "stop"}]})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return  # the talekeeper server died or gave up mid-reply
                fake._finish(number)
                self.close_connection = True

            def _event(self, payload: dict[str, Any]) -> None:
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()

        return Handler

    def _finish(self, number: int) -> None:
        with self._lock:
            self.finished.add(number)
        if self.on_finished is not None:
            self.on_finished(number)


if __name__ == "__main__":  # run it by hand: python -m tests.reliability.fakemodel
    with FakeModelServer(chunk_delay=0.05) as server:
        print(server.endpoint, flush=True)
        threading.Event().wait()
