"""`talekeeper serve --workers N`: N processes on one port that share the players, and
the death of one costs only the turns it was writing (web/processes.py).

A real `talekeeper serve --workers 2` on PostgreSQL: many connections kept open, as
browsers keep them, are spread over both processes (uvicorn's shared socket gave one
process most of them); one process is killed while every player has a turn streaming —
the turns on the other process finish, the dead one is started again, and the next turns
everywhere are played as if nothing happened.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import httpx

from tests import pg, waiting
from tests.reliability.crash import DEMO, REPO, free_port, is_summariser, sse_events
from tests.reliability.fakemodel import FakeModelServer

pytestmark = pg.postgresql_only

CONNECTIONS = 16


def serve_workers(home: Path, endpoint: str, port: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TALEKEEPER_")}
    env["PYTHONPATH"] = str(REPO)
    command = [
        sys.executable, "-m", "talekeeper.cli", "serve", "--workers", "2",
        "--port", str(port), "--data-dir", str(home),
        "--database-url", os.environ["TALEKEEPER_DATABASE_URL"],
        "--endpoint", endpoint, "--model", "fake",
    ]  # fmt: skip
    return subprocess.Popen(
        command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def answering(base: str) -> bool:
    try:
        return httpx.get(f"{base}/api/health", timeout=waiting.bound(5)).status_code == 200
    except httpx.HTTPError:
        return False


def test_connections_spread_over_the_processes_and_a_death_costs_only_its_turns(
    tmp_path: Path,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    held = threading.Event()  # narrations wait here, all streaming at once, until released
    arrived = threading.Semaphore(0)

    def hold(_number: int, body: dict) -> None:
        if body.get("stream") and not is_summariser(body) and not held.is_set():
            arrived.release()
            held.wait(waiting.bound(120))

    with FakeModelServer(chunk_delay=0.002) as fake:
        fake.on_request = hold
        server = serve_workers(tmp_path, fake.endpoint, port)
        output: list[str] = []
        reader = threading.Thread(target=lambda: output.extend(server.stdout), daemon=True)
        reader.start()
        try:
            waiting.until(lambda: answering(base), "talekeeper serve --workers 2 answering", 120)
            clients = [
                httpx.Client(base_url=base, timeout=waiting.bound(60)) for _ in range(CONNECTIONS)
            ]
            owners = [0] * CONNECTIONS
            together = threading.Barrier(CONNECTIONS)

            def connect(i: int) -> None:  # all at once, as a table of players arrives
                together.wait()
                owners[i] = clients[i].get("/api/health").json()["process"]

            arriving = [threading.Thread(target=connect, args=(i,)) for i in range(CONNECTIONS)]
            for thread in arriving:
                thread.start()
            for thread in arriving:
                thread.join()
            # a connection stays with its process; new ones are dealt out among them
            assert all(
                c.get("/api/health").json()["process"] == o
                for c, o in zip(clients, owners, strict=True)
            )
            spread = Counter(owners)
            assert len(spread) == 2 and min(spread.values()) >= 2, spread

            held.set()  # adventures start without holding anything
            stories = [
                c.post(
                    "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
                ).json()["id"]
                for c in clients
            ]
            held.clear()
            doomed = owners[0]
            results: dict[int, str] = {}

            def play(i: int) -> None:
                try:
                    with clients[i].stream(
                        "POST",
                        f"/api/adventures/{stories[i]}/turns",
                        json={"kind": "continue"},
                        headers={"Accept": "text/event-stream"},
                    ) as response:
                        events = [name for name, _ in sse_events(response)]
                    results[i] = "done" if events and events[-1] == "done" else str(events[-1:])
                except httpx.HTTPError:
                    results[i] = "broken"

            turns = [threading.Thread(target=play, args=(i,)) for i in range(CONNECTIONS)]
            for turn in turns:
                turn.start()
            for _ in range(CONNECTIONS):  # every turn accepted and waiting on the model
                assert arrived.acquire(timeout=waiting.bound(60)), "a turn never reached the model"
            os.kill(doomed, signal.SIGKILL)  # mid-turn, for the turns it was writing
            held.set()
            for turn in turns:
                turn.join(waiting.bound(120))
            for i, owner in enumerate(owners):
                if owner == doomed:
                    assert results[i] == "broken", (i, results[i])
                else:
                    assert results[i] == "done", (i, results[i])  # the other process's players

            waiting.until(
                lambda: any("starting another" in line for line in output),
                "the dead process started again",
                60,
            )
            waiting.until(lambda: answering(base), "both processes answering", 60)
            for i in range(CONNECTIONS):  # everyone plays on, on fresh connections
                with httpx.Client(base_url=base, timeout=waiting.bound(60)) as again:
                    played = again.post(
                        f"/api/adventures/{stories[i]}/turns", json={"kind": "continue"}
                    )
                    assert played.status_code == 200, played.text
            for client in clients:
                client.close()
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=waiting.bound(30))
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        assert any("each listening on a socket of its own" in line for line in output), output
