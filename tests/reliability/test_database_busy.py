"""A database held by another writer past the busy timeout is a clear refusal, never a 500.

SQLite serialises writers on the file: a statement waits up to `BUSY_TIMEOUT_S` for
another connection's write lock and then fails with "database is locked", which used to
reach the player as an unexplained 500 (an undo right after a restart, under load). Here a
second connection holds a write transaction open (as another process would) while the app
undoes, plays and edits; every answer is a 503 `DatabaseBusy` with the one error body and a
Retry-After, nothing is written, and once the lock goes the same requests succeed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.store import db
from talekeeper.store.db import DatabaseBusy, WriteConflict, database_refusal
from talekeeper.web.app import create_app
from tests.conftest import DEMO


@pytest.fixture
def impatient(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "BUSY_TIMEOUT_S", 0.2)  # read when each connection opens


@contextmanager
def held_write_lock(path: Path) -> Iterator[None]:
    """Another connection in the middle of a write transaction, as another process would be."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE adventures SET title = title")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


def test_a_held_write_lock_answers_503_not_500_and_writes_nothing(
    isolated_home: Path, impatient: None
) -> None:
    if db.DATABASE_URL_ENV in __import__("os").environ:
        pytest.skip("SQLite's file lock; PostgreSQL's lock errors are mapped by sqlstate below")
    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider(["The lamp gutters."] * 4))
    client = TestClient(
        create_app(tk), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
    )
    story = client.post(
        "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
    ).json()
    aid = story["id"]
    assert client.post(f"/api/adventures/{aid}/turns", json={"kind": "continue"}).status_code == 200
    before = client.get(f"/api/adventures/{aid}").json()

    with held_write_lock(tk.db.path):
        for method, url, body in (
            ("POST", f"/api/adventures/{aid}/undo", None),
            ("POST", f"/api/adventures/{aid}/save-points", {"name": "busy"}),
            ("POST", "/api/adventures", {"scenario_id": DEMO, "answers": {"name": "Bo"}}),
            ("DELETE", f"/api/adventures/{aid}", None),
        ):
            response = client.request(method, url, json=body)
            assert response.status_code == 503, (url, response.status_code, response.text[:300])
            assert response.json() == {
                "detail": DatabaseBusy().args[0],
                "error": "DatabaseBusy",
                "errors": [],
            }
            assert response.headers["retry-after"] == "2"
        # A turn streams the model's reply first and meets the lock when it commits: the
        # stream ends with the same words (not "internal error"), and nothing is saved.
        stream = client.post(
            f"/api/adventures/{aid}/turns",
            json={"kind": "continue"},
            headers={"Accept": "text/event-stream"},
        )
        assert stream.status_code == 200 and "event: error" in stream.text, stream.text[-300:]
        assert DatabaseBusy().args[0] in stream.text and "internal error" not in stream.text

        page = client.post(f"/adventures/{aid}/undo")  # the HTML page's undo: the same answer
        assert page.status_code == 503, page.text[:300]
        # Reads need no write lock (WAL): the story is still shown while another writes.
        assert client.get(f"/api/adventures/{aid}").json() == before

    assert client.get(f"/api/adventures/{aid}").json() == before  # nothing was written
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200  # free again
    tk.db.dispose()


def test_the_terminal_and_services_get_the_same_refusal(
    isolated_home: Path, impatient: None
) -> None:
    """The unit of work itself raises DatabaseBusy (an Unavailable), not OperationalError."""
    if db.DATABASE_URL_ENV in __import__("os").environ:
        pytest.skip("SQLite's file lock")
    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider(["x"]))
    from sqlalchemy import text

    with held_write_lock(tk.db.path), pytest.raises(DatabaseBusy) as caught:
        with tk.db.session() as session:
            session.execute(text("UPDATE adventures SET title = title"))
    assert isinstance(caught.value.__cause__, OperationalError)
    tk.db.dispose()


class _Orig(Exception):
    def __init__(self, sqlstate: str | None) -> None:
        super().__init__("driver error")
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("orig", "expected"),
    [
        (sqlite3.OperationalError("database is locked"), DatabaseBusy),
        (sqlite3.OperationalError("database table is locked"), DatabaseBusy),
        (sqlite3.OperationalError("no such table: nodes"), None),  # a bug stays a 500
        (sqlite3.OperationalError("disk I/O error"), None),
        (_Orig("55P03"), DatabaseBusy),  # PostgreSQL lock_not_available (lock_timeout)
        (_Orig("40001"), WriteConflict),  # serialization_failure
        (_Orig("40P01"), WriteConflict),  # deadlock_detected
        (_Orig("42P01"), None),  # undefined_table
    ],
)
def test_lock_errors_are_told_apart_from_failures(orig: Exception, expected: type | None) -> None:
    refusal = database_refusal(OperationalError("UPDATE …", {}, orig))
    assert (type(refusal) if refusal else None) is expected
    if refusal is not None:
        assert refusal.status in (409, 503) and str(refusal).endswith(
            ("in a moment.", "try again.")
        )
