"""The guard in front of the API (talekeeper/web/security.py), probed the way attackers would.

tests/test_security.py covers the basics (foreign Host, cross-site Origin, headers on pages);
these go after the edges: another local port, Sec-Fetch-Site without Origin, oversized
bodies with and without Content-Length, refusals that must still carry the headers, and
WebSockets.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from talekeeper.web.security import SECURITY_HEADERS, BodyLimits, LocalOnlyMiddleware
from tests import waiting
from tests.browser import live_server
from tests.conftest import DEMO
from tests.reliability.helpers import ThreadGate

MB = 1024 * 1024


def adventure_count(client: TestClient) -> int:
    return len(client.get("/api/adventures").json())


def assert_security_headers(response: httpx.Response) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, (name, response.status_code)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:3000"},  # another program on this machine
        {"Origin": "http://localhost:8000"},  # same port, other name: another origin
        {"Origin": "https://127.0.0.1:8000.evil.example"},
        {"Origin": "http://127.0.0.1:8000@evil.example"},
        {"Origin": "file://"},
        {"Origin": "not a url"},
        {"Referer": "http://127.0.0.1:5173/attack.html"},
        {"Sec-Fetch-Site": "cross-site"},  # a browser that sent no Origin
        {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:8000"},
    ],
)
def test_changes_from_any_other_origin_are_refused(
    client: TestClient, headers: dict[str, str]
) -> None:
    before = adventure_count(client)
    response = client.post("/api/adventures", json={"scenario_id": DEMO}, headers=headers)
    assert response.status_code == 403, (headers, response.text)
    assert "another site" in response.json()["detail"]
    assert_security_headers(response)
    assert adventure_count(client) == before


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, the CLI
        {"Origin": "http://127.0.0.1:8000"},
        {"Referer": "http://127.0.0.1:8000/adventures/1"},
        {"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},  # typed into the address bar
    ],
)
def test_changes_from_its_own_pages_pass(client: TestClient, headers: dict[str, str]) -> None:
    response = client.post("/api/adventures", json={"scenario_id": DEMO}, headers=headers)
    assert response.status_code == 201, (headers, response.text)


def test_default_port_origin_matches_a_host_without_port(tk: Talekeeper) -> None:
    with TestClient(create_app(tk, {"story.lan"}), base_url="http://story.lan") as client:
        ok = client.post(
            "/api/adventures", json={"scenario_id": DEMO}, headers={"Origin": "http://story.lan"}
        )
        assert ok.status_code == 201
        other = client.post(
            "/api/adventures", json={"scenario_id": DEMO}, headers={"Origin": "http://story.lan:81"}
        )
        assert other.status_code == 403


def test_rebinding_names_are_refused_even_for_reads(client: TestClient) -> None:
    for host in ("evil.example", "127.0.0.1.nip.io", "localhost.evil.example", ""):
        response = client.get("/api/adventures", headers={"Host": host})
        assert response.status_code == 403, host
        assert_security_headers(response)


def test_an_oversized_body_is_refused_with_a_clear_413_and_changes_nothing(
    client: TestClient,
) -> None:
    before = adventure_count(client)
    body = {"scenario_id": DEMO, "answers": {"name": "x" * (3 * MB)}}
    response = client.post("/api/adventures", json=body)
    assert response.status_code == 413
    detail = response.json()["detail"]
    assert "at most 2 MB" in detail and "Nothing was changed" in detail
    assert_security_headers(response)
    assert adventure_count(client) == before


def test_a_body_without_content_length_is_counted_as_it_arrives(client: TestClient) -> None:
    before = adventure_count(client)

    def chunks():
        yield b'{"scenario_id": "' + DEMO.encode() + b'", "answers": {"name": "'
        for _ in range(40):
            yield b"y" * (MB // 8)
        yield b'"}}'

    response = client.post(
        "/api/adventures", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert "at most 2 MB" in response.json()["detail"]
    assert adventure_count(client) == before


def test_a_lying_content_length_does_not_get_past_the_count() -> None:
    seen: list[int] = []

    async def app(scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        seen.append(len(body))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = LocalOnlyMiddleware(app, set(), BodyLimits(default=1000, imports=5000))
    messages = [
        {"type": "http.request", "body": b"a" * 600, "more_body": True},
        {"type": "http.request", "body": b"a" * 600, "more_body": False},
    ]
    sent: list[dict] = []

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/x",
        "scheme": "http",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-length", b"10")],
    }
    asyncio.run(guard(scope, receive, send))
    assert seen == []  # the app never got the whole body
    assert sent[0]["status"] == 413


def test_imports_get_a_larger_limit_and_still_have_one(client: TestClient) -> None:
    limits = BodyLimits()
    assert limits.for_path("/api/bundles/import") == limits.imports > limits.default
    assert limits.for_path("/api/adventures/1/turns") == limits.default
    # 3 MB is over the JSON limit but within the import limit: it reaches the router.
    response = client.post("/api/no-such/import", content=b"x" * (3 * MB))
    assert response.status_code in (404, 405)
    response = client.post("/api/no-such/import", content=b"x" * (limits.imports + 1))
    assert response.status_code == 413
    assert "at most 32 MB" in response.json()["detail"]


def test_headers_on_every_kind_of_response(client: TestClient, adventure_id: int, scripted) -> None:
    scripted.queue("The rain keeps on.")
    responses = [
        client.get("/"),
        client.get("/static/app.css"),
        client.get("/api/no-such-thing"),
        client.get(f"/api/adventures/{adventure_id}"),
        client.post(f"/api/adventures/{adventure_id}/undo"),  # 409: nothing to undo
        client.post(
            f"/api/adventures/{adventure_id}/turns",
            json={"kind": "do", "text": "wait"},
            headers={"Accept": "text/event-stream"},
        ),
    ]
    assert [r.status_code for r in responses] == [200, 200, 404, 200, 409, 200]
    for response in responses:
        assert_security_headers(response)


def test_sse_is_not_buffered_by_the_guard(tk: Talekeeper, scripted) -> None:
    """A streamed turn arrives in pieces over a real socket: the guard does not hold it."""
    gate = ThreadGate()
    scripted.gate = gate
    # held once a whole first line is out: the echo guard shows a line when it is judged
    scripted.gate_after_chunks = -(-len("Rain falls.\n") // scripted.chunk_size)
    scripted.queue("Rain falls.\nThe ferry lamp gutters and the rope creaks in the dark water.")
    with (
        live_server(create_app(tk)) as base,
        httpx.Client(base_url=base, timeout=waiting.bound(10)) as http,
    ):
        adventure = http.post("/api/adventures", json={"scenario_id": DEMO}).json()["id"]
        with http.stream(
            "POST",
            f"/api/adventures/{adventure}/turns",
            json={"kind": "do", "text": "wait"},
            headers={"Accept": "text/event-stream"},
        ) as response:
            assert_security_headers(response)
            seen, chunks = "", response.iter_text()
            for chunk in chunks:
                seen += chunk
                if "event: text" in seen:
                    break
            # The first pieces arrived while the model is still held mid-reply.
            assert "event: done" not in seen
            gate.set()
            rest = "".join(chunks)
        assert "event: done" in rest


def test_websockets_get_the_same_checks() -> None:
    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text("hello")
        await websocket.close()

    app = LocalOnlyMiddleware(Starlette(routes=[WebSocketRoute("/ws", echo)]), set())
    client = TestClient(app, base_url="http://127.0.0.1:8000")
    with client.websocket_connect("ws://127.0.0.1:8000/ws") as ws:
        assert ws.receive_text() == "hello"
    for headers in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}):
        with pytest.raises(WebSocketDisconnect) as refused:
            with client.websocket_connect("ws://127.0.0.1:8000/ws", headers=headers) as ws:
                ws.receive_text()
        assert refused.value.code == 1008


def test_the_server_listens_on_loopback_unless_told_otherwise(
    isolated_home, served_by_cli: dict
) -> None:
    from typer.testing import CliRunner

    from talekeeper.cli import app as cli

    result = CliRunner().invoke(
        cli, ["serve", "--data-dir", str(isolated_home), "--endpoint", "http://127.0.0.1:9/v1"]
    )
    assert result.exit_code == 0, result.output
    assert served_by_cli["host"] == "127.0.0.1"
