"""Several `talekeeper serve` processes on one PostgreSQL database.

Two real app processes on loopback, one database: the writer lock lives in the database
(an advisory lock per adventure), so a second writer is refused whichever process it
reaches, different adventures are played in parallel across the processes, and a process
killed mid-turn takes its lock with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from talekeeper.service.app import Talekeeper
from talekeeper.service.locks import AdventureBusy
from talekeeper.store.db import parse_database_url
from tests import pg, waiting
from tests.reliability.crash import DEMO, ServerProcess, is_summariser
from tests.reliability.fakemodel import FakeModelServer
from tests.reliability.invariants import check_database

pytestmark = pg.postgresql_only


class Gate:
    """Holds every narration request at the fake model until released, counting arrivals."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()  # open while the stories are set up; `close()` starts holding
        self.arrived = threading.Semaphore(0)

    def close(self) -> None:
        self.open.clear()

    def on_request(self, _number: int, body: dict) -> None:
        if body.get("stream") and not is_summariser(body) and not self.open.is_set():
            self.arrived.release()
            self.open.wait(30)


@pytest.fixture
def gate() -> Iterator[tuple[FakeModelServer, Gate]]:
    gate = Gate()
    with FakeModelServer(chunk_delay=0.001) as fake:
        fake.on_request = gate.on_request
        try:
            yield fake, gate
        finally:
            gate.open.set()


@pytest.fixture
def two_servers(
    tmp_path: Path, gate, postgres_database: str
) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    fake, _ = gate
    servers = (
        ServerProcess(tmp_path / "a", fake.endpoint, postgres_database),
        ServerProcess(tmp_path / "b", fake.endpoint, postgres_database),
    )
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.kill()


def new_adventure(http: httpx.Client) -> int:
    response = http.post("/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def stream_turn(base_url: str, adventure: int) -> str:
    """Play a Continue over SSE; the last event's name ("done" or "error")."""
    with (
        httpx.Client(base_url=base_url, timeout=waiting.bound(60)) as http,
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
            if line.startswith("event:"):
                last = line[6:].strip()
        return last


def assert_busy(response: httpx.Response) -> None:
    assert response.status_code == 409, response.text
    assert "busy" in response.json()["detail"]


def test_two_processes_refuse_a_second_writer_and_play_different_adventures_in_parallel(
    two_servers, gate, postgres_database: str
) -> None:
    a, b = two_servers
    _, held = gate
    with (
        httpx.Client(base_url=a.base_url, timeout=waiting.bound(30)) as on_a,
        httpx.Client(base_url=b.base_url, timeout=waiting.bound(30)) as on_b,
    ):
        first, second = new_adventure(on_a), new_adventure(on_b)
        assert (
            on_b.post(f"/api/adventures/{first}/turns", json={"kind": "continue"}).status_code
            == 200
        )
        assert on_a.get(f"/api/adventures/{first}").json()["turns"] == 1  # one database
        held.close()

        with ThreadPoolExecutor(2) as pool:
            turn_on_a = pool.submit(stream_turn, a.base_url, first)
            assert held.arrived.acquire(timeout=waiting.bound(30)), (
                "the first turn never reached the model"
            )
            # The turn is in flight on process A: every writer on that adventure is refused,
            # on process B as on A.
            assert_busy(on_b.post(f"/api/adventures/{first}/turns", json={"kind": "continue"}))
            assert_busy(on_b.post(f"/api/adventures/{first}/retry", json={}))
            assert_busy(on_b.post(f"/api/adventures/{first}/undo"))
            assert_busy(on_b.post(f"/api/adventures/{first}/save-points", json={"name": "now"}))
            assert_busy(on_a.post(f"/api/adventures/{first}/turns", json={"kind": "continue"}))
            # The model is writing, and no transaction is open anywhere on the database:
            # the lock is held by an idle connection, not by a transaction.
            assert open_transactions(postgres_database) == []
            # … while process B plays another adventure at the same time: its turn reaches
            # the model while A's is still held there.
            turn_on_b = pool.submit(stream_turn, b.base_url, second)
            assert held.arrived.acquire(timeout=waiting.bound(30)), (
                "a different adventure waited for another's turn"
            )
            held.open.set()
            assert turn_on_a.result(timeout=waiting.bound(60)) == "done"
            assert turn_on_b.result(timeout=waiting.bound(60)) == "done"

        # The lock is free again everywhere: the other process can write.
        assert (
            on_b.post(f"/api/adventures/{first}/turns", json={"kind": "continue"}).status_code
            == 200
        )
        assert on_a.post(f"/api/adventures/{second}/undo").status_code == 200
        assert on_a.get(f"/api/adventures/{first}").json()["turns"] == 3
        assert on_b.get(f"/api/adventures/{second}").json()["turns"] == 0
    snap = check_database(postgres_database)
    assert len([n for n in snap.nodes.values() if n.adventure_id == first]) == 4  # opening + 3


def test_a_process_killed_mid_turn_takes_its_lock_with_it(
    two_servers, gate, postgres_database: str
) -> None:
    a, b = two_servers
    _, held = gate
    with httpx.Client(base_url=b.base_url, timeout=waiting.bound(30)) as on_b:
        adventure = new_adventure(on_b)
        held.close()
        with ThreadPoolExecutor(1) as pool:
            doomed = pool.submit(lambda: _swallow(stream_turn, a.base_url, adventure))
            assert held.arrived.acquire(timeout=waiting.bound(30))
            assert_busy(on_b.post(f"/api/adventures/{adventure}/undo"))
            a.kill()  # SIGKILL mid-turn: its database session ends, and its lock with it
            doomed.result(timeout=waiting.bound(30))
        held.open.set()
        # PostgreSQL ends the dead process's session as soon as it reads the closed socket:
        # until then (moments) the adventure still says busy; after, it plays.
        for _ in range(200):
            played = on_b.post(f"/api/adventures/{adventure}/turns", json={"kind": "continue"})
            if played.status_code != 409:
                break
            assert "busy" in played.json()["detail"], played.text
            time.sleep(0.05)
        assert played.status_code == 200, played.text
        story = on_b.get(f"/api/adventures/{adventure}").json()
    assert story["turns"] == 1  # the killed turn wrote nothing; B's turn is the only one
    check_database(postgres_database)


def open_transactions(url: str) -> list[tuple]:
    engine = create_engine(parse_database_url(url), poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return connection.execute(
                text(
                    "SELECT pid, state, query FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
                )
            ).fetchall()
    finally:
        engine.dispose()


def test_the_writer_lock_lives_in_the_database(tmp_path: Path, postgres_database: str) -> None:
    """Two app objects on one database stand for two processes: neither sees the other's
    in-process lock, only the database's."""
    one, two = Talekeeper(tmp_path / "one"), Talekeeper(tmp_path / "two")
    try:
        one.locks.acquire(7)
        with pytest.raises(AdventureBusy):
            two.locks.acquire(7)
        assert two.locks.is_busy(7) and not two.locks.is_busy(8)
        two.locks.acquire(8)  # another adventure: free
        one.locks.release(7)
        assert not two.locks.is_busy(7)
        with two.locks.hold(7):
            with pytest.raises(AdventureBusy):
                one.locks.acquire(7)
        two.locks.release(8)
        assert not one.locks.is_busy(7) and not one.locks.is_busy(8)
    finally:
        one.db.dispose()
        two.db.dispose()


def _swallow(function, *args):
    try:
        return function(*args)
    except (httpx.HTTPError, AssertionError):
        return None


def test_memory_writes_of_one_adventure_are_serialised_across_processes(
    tmp_path: Path, postgres_database: str
) -> None:
    """The memory bank inserts "unless the block has one": run by two processes at once,
    both could see none. `serialize` makes the second wait for the first's commit."""
    from talekeeper.memory.bank import MEMORY_WRITES
    from talekeeper.store.db import DatabaseBusy, serialize

    one, two = Talekeeper(tmp_path / "one"), Talekeeper(tmp_path / "two")
    try:
        with one.db.session() as first:
            serialize(first, MEMORY_WRITES, 5)
            with pytest.raises(DatabaseBusy), two.db.session() as second:  # lock_timeout: 55P03
                second.execute(text("SET LOCAL lock_timeout = '100ms'"))
                serialize(second, MEMORY_WRITES, 5)  # waits for `first`: gives up here
            with two.db.session() as other:
                serialize(other, MEMORY_WRITES, 6)  # another adventure: no wait
        with two.db.session() as second:  # `first` committed: free again
            second.execute(text("SET LOCAL lock_timeout = '100ms'"))
            serialize(second, MEMORY_WRITES, 5)
    finally:
        one.db.dispose()
        two.db.dispose()
