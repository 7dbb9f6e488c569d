"""One writer per adventure, over real HTTP: exactly one proceeds, the rest get 409.

A live uvicorn server (tests/browser.live_server) with a scripted model whose replies can
be held mid-stream (`ThreadGate`), and many clients on threads, so requests really do
arrive together. Every state-changing API route on an adventure is found from the app's
own routes: a new writer (retry, restore, a correction …) is covered the day it lands,
and if it forgets the lock this test names it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests import waiting
from tests.browser import live_server
from tests.conftest import DEMO
from tests.reliability.helpers import ThreadGate
from tests.reliability.invariants import check_database

CLIENTS = 24
WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# Bodies for writer routes whose smallest schema-valid body is not a valid request.
BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/api/adventures/{adventure_id}/turns"): {"kind": "continue"},
    ("POST", "/api/adventures/{adventure_id}/turns/{node_id}/edit"): {"narration": "Edited."},
}
# Writers that do not touch the tree, the head or the state, and may proceed while the
# adventure is busy (the memory bank itself writes memories beside turns). Every other
# state-changing route on an adventure must answer 409 while another writer holds it.
MAY_PROCEED_WHILE_BUSY = {
    ("PATCH", "/api/adventures/{adventure_id}/memories/{memory_id}"),
    ("DELETE", "/api/adventures/{adventure_id}/memories/{memory_id}"),
    # Which connection tells the adventure: read by the next turn, never by the one in flight.
    ("PUT", "/api/adventures/{adventure_id}/connection"),
}


@pytest.fixture
def gate() -> ThreadGate:
    return ThreadGate()


@pytest.fixture
def live(isolated_home: Path, gate: ThreadGate) -> Iterator[tuple[str, Talekeeper, Any]]:
    provider = ScriptedProvider(
        lambda request: "The river keeps its counsel tonight.", chunk_size=6
    )
    # held after "The river keeps its coun": the echo guard shows a line from its first
    # four words, so the turn is streaming (a text event went out) when it stops
    provider.gate, provider.gate_after_chunks = gate, 4
    tk = Talekeeper(isolated_home, provider_override=provider)
    app = create_app(tk)
    with live_server(app) as base:
        yield base, tk, app
    tk.db.dispose()


def new_adventure(http: httpx.Client) -> dict[str, Any]:
    response = http.post("/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}})
    assert response.status_code == 201, response.text
    return response.json()


@contextmanager
def turn_in_flight(base: str, adventure: int, gate: ThreadGate) -> Iterator[dict[str, Any]]:
    """A streamed turn that has been accepted and is held mid-reply until the block ends."""
    accepted = threading.Event()
    outcome: dict[str, Any] = {}

    def play() -> None:
        with (
            httpx.Client(base_url=base, timeout=waiting.bound(30)) as http,
            http.stream(
                "POST",
                f"/api/adventures/{adventure}/turns",
                json={"kind": "do", "text": "wait"},
                headers={"Accept": "text/event-stream"},
            ) as response,
        ):
            outcome["status"] = response.status_code
            for line in response.iter_lines():
                if line.startswith("event: accepted"):
                    accepted.set()
                if line.startswith("event:"):
                    outcome["last"] = line[6:].strip()
        accepted.set()

    thread = threading.Thread(target=play)
    thread.start()
    assert accepted.wait(10), "the first turn was never accepted"
    try:
        yield outcome
    finally:
        gate.set()  # never leave the server holding a stream, pass or fail
        thread.join(30)


def minimal(schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """The smallest instance of an OpenAPI schema: required fields only, first enum value."""
    if "$ref" in schema:
        return minimal(components[schema["$ref"].rsplit("/", 1)[1]], components)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return minimal(options[0], components)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        return {
            name: minimal(schema["properties"][name], components)
            for name in schema.get("required", [])
        }
    if kind == "array":
        return [
            minimal(schema.get("items", {}), components) for _ in range(schema.get("minItems", 0))
        ]
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return False
    return None


def writer_requests(app, ids: dict[str, int]) -> list[tuple[str, str, str, Any]]:
    """(method, route, url, json body) for every state-changing /api route on one
    adventure, read from the app's OpenAPI document."""
    spec = app.openapi()
    components = spec.get("components", {}).get("schemas", {})
    requests = []
    for path, operations in spec["paths"].items():
        if not path.startswith("/api/adventures/{adventure_id}"):
            continue
        for method, operation in operations.items():
            if method.upper() not in WRITE_METHODS:
                continue
            body = BODIES.get((method.upper(), path))
            if body is None and "requestBody" in operation:
                schema = (
                    operation["requestBody"]["content"]
                    .get("application/json", {})
                    .get("schema", {})
                )
                body = minimal(schema, components)
            url = path
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path":
                    name = parameter["name"]
                    url = url.replace("{" + name + "}", str(ids.get(name, ids["node_id"])))
            requests.append((method.upper(), path, url, body))
    return requests


def send(base: str, method: str, url: str, body: Any) -> httpx.Response:
    with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
        return (
            http.request(method, url, json=body) if body is not None else http.request(method, url)
        )


def story_with_a_turn(base: str, gate: ThreadGate) -> dict[str, int]:
    """An adventure with one turn and a Save Point: ids for every kind of path parameter."""
    gate.set()
    with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
        adventure = new_adventure(http)["id"]
        turn = http.post(f"/api/adventures/{adventure}/turns", json={"kind": "continue"}).json()[
            "turn"
        ]
        point = http.post(f"/api/adventures/{adventure}/save-points", json={"name": "before"})
    gate.clear()
    ids = {"adventure_id": adventure, "node_id": turn["id"], "leaf_id": turn["id"], "index": 0}
    if point.status_code == 201:
        ids["save_point_id"] = point.json()["id"]
    return ids


def test_while_a_turn_streams_every_other_writer_gets_409(live, gate: ThreadGate) -> None:
    base, tk, app = live
    ids = story_with_a_turn(base, gate)
    adventure = ids["adventure_id"]
    writers = writer_requests(app, ids)
    routes = {(method, route) for method, route, _, _ in writers}
    for expected in ("/undo", "/redo", "/turns", ""):
        assert any(r == "/api/adventures/{adventure_id}" + expected for _, r in routes), expected

    with turn_in_flight(base, adventure, gate) as first:
        # Every writer, several times over, all at once.
        batch = [writers[i % len(writers)] for i in range(max(CLIENTS, 2 * len(writers)))]
        with ThreadPoolExecutor(len(batch)) as pool:
            responses = list(pool.map(lambda w: send(base, w[0], w[2], w[3]), batch))
        for (method, route, url, _), response in zip(batch, responses, strict=True):
            if (method, route) in MAY_PROCEED_WHILE_BUSY:
                continue
            assert response.status_code == 409, (
                f"{method} {url} answered {response.status_code} while a turn was in flight: "
                f"{response.text[:200]} — every writer must take the adventure's lock first "
                "(or, if it touches neither tree nor state, be listed in MAY_PROCEED_WHILE_BUSY)"
            )
            detail = response.json()["detail"]
            assert "busy" in detail and "try again" in detail, detail
    assert first == {"status": 200, "last": "done"}

    with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
        after = http.get(f"/api/adventures/{adventure}").json()
    assert after["turns"] == 2 and len(after["turns_shown"]) == 3
    snap = check_database(tk.db)
    assert len([n for n in snap.nodes.values() if n.adventure_id == adventure]) == 3


def test_simultaneous_generations_on_one_adventure_exactly_one_proceeds(
    live, gate: ThreadGate
) -> None:
    """Turns, retries and edited actions fired at the same instant: one proceeds (it holds
    the model until every other request has had its answer), all others get 409."""
    base, tk, _app = live
    ids = story_with_a_turn(base, gate)
    adventure, node = ids["adventure_id"], ids["node_id"]
    requests = [
        (f"/api/adventures/{adventure}/turns", {"kind": "do", "text": "listen"}),
        (f"/api/adventures/{adventure}/retry", {}),
        (f"/api/adventures/{adventure}/turns/{node}/edit", {"kind": "say", "text": "Who's there?"}),
    ]
    start = threading.Barrier(CLIENTS)

    def fire(i: int) -> tuple[int, str]:
        url, body = requests[i % len(requests)]
        with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
            start.wait()
            response = http.post(url, json=body)
            return response.status_code, response.text

    with ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(fire, i) for i in range(CLIENTS)]
        # The winner is held at the model until everyone else has been answered.
        deadline = time.monotonic() + waiting.bound(20)
        while sum(f.done() for f in futures) < CLIENTS - 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.set()
        results = [f.result() for f in futures]
    statuses = Counter(status for status, _ in results)
    assert statuses == {200: 1, 409: CLIENTS - 1}, (
        statuses,
        [t[:120] for s, t in results if s not in (200, 409)],
    )
    snap = check_database(tk.db)
    assert (
        len([n for n in snap.nodes.values() if n.adventure_id == adventure]) == 3
    )  # root, turn, one more


def test_simultaneous_moves_never_lose_an_update(live, gate: ThreadGate) -> None:
    """Undo racing undo: each one that says 200 moved the head one step; none is lost."""
    base, tk, _app = live
    gate.set()
    with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
        adventure = new_adventure(http)["id"]
        for _ in range(6):
            assert (
                http.post(
                    f"/api/adventures/{adventure}/turns", json={"kind": "continue"}
                ).status_code
                == 200
            )
    start = threading.Barrier(CLIENTS)

    def move(i: int) -> int:
        with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
            start.wait()
            return http.post(
                f"/api/adventures/{adventure}/{'undo' if i % 3 else 'redo'}"
            ).status_code

    with ThreadPoolExecutor(CLIENTS) as pool:
        statuses = list(pool.map(move, range(CLIENTS)))
    assert set(statuses) <= {200, 409}, statuses
    undone = sum(1 for i, s in enumerate(statuses) if s == 200 and i % 3)
    redone = sum(1 for i, s in enumerate(statuses) if s == 200 and not i % 3)
    with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
        story = http.get(f"/api/adventures/{adventure}").json()
    assert story["turns"] == 6 - undone + redone
    check_database(tk.db)


def test_different_adventures_play_at_the_same_time(live, gate: ThreadGate) -> None:
    """Every adventure's turn is accepted and held at once: none waits for another."""
    base, tk, _app = live
    count = 6
    with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
        adventures = [new_adventure(http)["id"] for _ in range(count)]
    held = threading.Semaphore(0)

    def play(adventure: int) -> str:
        with (
            httpx.Client(base_url=base, timeout=waiting.bound(30)) as http,
            http.stream(
                "POST",
                f"/api/adventures/{adventure}/turns",
                json={"kind": "continue"},
                headers={"Accept": "text/event-stream"},
            ) as response,
        ):
            assert response.status_code == 200, response.read()
            last = ""
            for line in response.iter_lines():
                if line == "event: text":
                    held.release()  # streaming, and now held at the gate
                if line.startswith("event:"):
                    last = line[6:].strip()
            return last

    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(play, a) for a in adventures]
        for _ in adventures:  # all of them are mid-reply together
            assert held.acquire(timeout=waiting.bound(15)), (
                "an adventure's turn waited for another's"
            )
        # … and another writer on one of them is still refused, while the rest stream.
        assert send(base, "POST", f"/api/adventures/{adventures[0]}/undo", None).status_code == 409
        gate.set()
        assert [f.result(timeout=waiting.bound(30)) for f in futures] == ["done"] * count
    with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
        assert all(http.get(f"/api/adventures/{a}").json()["turns"] == 1 for a in adventures)
    check_database(tk.db)


def test_a_player_who_hangs_up_mid_stream_leaves_the_story_as_it_was(
    live, gate: ThreadGate
) -> None:
    """Stop, a closed tab, a dropped connection: the server cancels the generation, writes
    nothing and frees the adventure."""
    base, tk, _app = live
    with httpx.Client(base_url=base, timeout=waiting.bound(30)) as http:
        adventure = new_adventure(http)["id"]
        with http.stream(
            "POST",
            f"/api/adventures/{adventure}/turns",
            json={"kind": "do", "text": "wait"},
            headers={"Accept": "text/event-stream"},
        ) as response:
            for line in response.iter_lines():
                if line == "event: text":
                    break  # streaming, held at the gate: hang up here
        before = check_database(tk.db)
        deadline = time.monotonic() + waiting.bound(10)
        while True:  # the server notices the hang-up and lets go of the adventure
            answer = http.post(f"/api/adventures/{adventure}/undo")
            if answer.status_code == 409 and "Nothing to undo" in answer.json()["detail"]:
                break
            assert answer.status_code == 409 and time.monotonic() < deadline, answer.text
            time.sleep(0.05)
        gate.set()  # were the generation still alive, it could finish now
        time.sleep(0.3)
        assert check_database(tk.db).nodes == before.nodes
        story = http.get(f"/api/adventures/{adventure}").json()
        assert story["turns"] == 0 and len(story["turns_shown"]) == 1
        assert (
            http.post(f"/api/adventures/{adventure}/turns", json={"kind": "continue"}).status_code
            == 200
        )


class HeldStatePass(ScriptedProvider):
    """Narrates at once; every structured state pass waits at `gate` (a ThreadGate)."""

    def __init__(self, reply, gate: ThreadGate) -> None:
        super().__init__(reply, chunk_size=6)
        self.pass_gate = gate
        self.passes = 0

    async def complete(self, request):
        if request.json_schema is not None:
            self.passes += 1
            await self.pass_gate.wait()
        return await super().complete(request)


STORM_UP = '{"events": [{"type": "change_stat", "stat": "world.storm", "by": 1}]}'


@pytest.fixture
def settling_live(isolated_home: Path, gate: ThreadGate) -> Iterator[tuple[str, Talekeeper]]:
    """Structured mode over HTTP: narrations answer at once, state passes wait at `gate`."""
    provider = HeldStatePass(
        lambda request: STORM_UP if request.json_schema is not None else "The tide turns.",
        gate,
    )
    tk = Talekeeper(isolated_home, provider_override=provider)
    app = create_app(tk)
    with live_server(app) as base:
        with httpx.Client(base_url=base, timeout=30) as http:
            http.put("/api/settings", json={"generation": {"state_updates": "structured"}})
        yield base, tk
        gate.set()  # never leave a state pass held at the end
    tk.db.dispose()


def written_while_its_pass_runs(base: str, adventure: int) -> tuple[dict, threading.Thread]:
    """A turn streamed up to its `done`; the thread goes on reading to its `settled`."""
    done: dict[str, Any] = {}
    seen = threading.Event()

    def play() -> None:
        with (
            httpx.Client(base_url=base, timeout=30) as http,
            http.stream(
                "POST",
                f"/api/adventures/{adventure}/turns",
                json={"kind": "do", "text": "watch the tide"},
                headers={"Accept": "text/event-stream"},
            ) as response,
        ):
            event = None
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event == "done":
                    done.update(json.loads(line[5:]))
                    seen.set()

    thread = threading.Thread(target=play)
    thread.start()
    assert seen.wait(15), "the turn was never written"
    return done, thread


def storm_at_head(tk: Talekeeper, adventure: int) -> int:
    from talekeeper.service import tree_ops

    return tree_ops.current_state(tk, adventure)["stats"]["world"]["storm"]["value"]


def test_during_the_state_pass_every_writer_waits_and_none_is_refused(
    settling_live, gate: ThreadGate
) -> None:
    """A turn's state pass holds the writer lock after `done`: the next action, an undo or
    a Save Point sent meanwhile wait for it (no 409), and go ahead on the settled story."""
    base, tk = settling_live
    with httpx.Client(base_url=base, timeout=30) as http:
        adventure = new_adventure(http)["id"]
    done, reader = written_while_its_pass_runs(base, adventure)
    assert done["turn"]["pending"] is True and storm_at_head(tk, adventure) == 4
    with ThreadPoolExecutor(2) as pool:
        # the next action, sent while the pass runs: held, not refused
        turn = pool.submit(
            send, base, "POST", f"/api/adventures/{adventure}/turns", {"kind": "continue"}
        )
        time.sleep(0.5)
        assert not turn.done(), "an action sent during the state pass did not wait for it"
        assert storm_at_head(tk, adventure) == 4
        gate.set()  # the first turn's pass ends; the held action plays on its settled state
        answer = turn.result(timeout=30)
    reader.join(30)
    assert answer.status_code == 200, answer.text
    second = answer.json()
    assert second["turn"]["parent_id"] == done["turn"]["id"]
    assert second["turn"]["pending"] is False  # JSON answers wait for their own pass
    assert storm_at_head(tk, adventure) == 6  # 4, +1 settled under the first, +1 the second
    check_database(tk.db)


def test_undo_during_the_state_pass_waits_then_steps_back_from_the_settled_turn(
    settling_live, gate: ThreadGate
) -> None:
    base, tk = settling_live
    with httpx.Client(base_url=base, timeout=30) as http:
        adventure = new_adventure(http)["id"]
    done, reader = written_while_its_pass_runs(base, adventure)
    with ThreadPoolExecutor(1) as pool:
        undo = pool.submit(send, base, "POST", f"/api/adventures/{adventure}/undo", None)
        time.sleep(0.5)
        assert not undo.done(), "undo during the state pass did not wait for it"
        gate.set()
        answer = undo.result(timeout=30)
    reader.join(30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["turns"] == 0 and answer.json()["can_redo"] is True
    with httpx.Client(base_url=base, timeout=30) as http:
        redone = http.post(f"/api/adventures/{adventure}/redo").json()
    last = redone["turns_shown"][-1]
    assert last["id"] == done["turn"]["id"] and last["pending"] is False
    assert [c["after"] for c in last["changes"] if c["type"] == "change_stat"] == [5]
    check_database(tk.db)
