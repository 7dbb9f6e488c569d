"""A database that is down or restarting is unavailable, not broken: every request says so
(503 with Retry-After and a sentence, in the API and on the page), a turn being written
says nothing was saved, and the first request after it is back simply works — no restart.

The store is cut by pointing the app's sessions at a database that cannot be reached (a
SQLite file in a folder that does not exist; a PostgreSQL port nothing listens on), as a
server that went away looks to the app; `tests/reliability/test_migrations_postgres.py`
and the crash soak cover a real server's restart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker

from talekeeper import accounts
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory.worker import MemoryWorker
from talekeeper.service.app import Talekeeper
from talekeeper.store.db import DatabaseUnavailable
from talekeeper.web.app import create_app
from tests.conftest import DEMO

OUT_OF_REACH = "cannot be"  # …reached / …opened: the sentence the player reads


@contextmanager
def store_out_of_reach(tk: Talekeeper) -> Iterator[None]:
    """While inside, every new unit of work meets a database that cannot be reached."""
    kept = tk.db._sessions
    if tk.db.is_postgresql:
        url = tk.db.engine.url.set(port=1)  # nothing listens there
        dead = create_engine(url, connect_args={"connect_timeout": 2}, pool_pre_ping=True)
    else:
        dead = create_engine(f"sqlite:///{tk.data_dir / 'gone' / 'talekeeper.db'}")
    tk.db._sessions = sessionmaker(dead, expire_on_commit=False)
    try:
        yield
    finally:
        tk.db._sessions = kept
        dead.dispose()


@pytest.fixture
def quiet_bank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MemoryWorker, "schedule", lambda self, adventure_id, after=None: None)


def test_a_lost_database_is_503_with_a_sentence_then_simply_works_again(
    isolated_home: Path, quiet_bank: None
) -> None:
    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider(["The lamp."] * 3))
    client = TestClient(
        create_app(tk), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
    )
    story = client.post("/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}})
    aid = story.json()["id"]
    with store_out_of_reach(tk):
        for method, path, body in (
            ("GET", "/api/adventures", None),
            ("GET", f"/api/adventures/{aid}", None),
            ("POST", f"/api/adventures/{aid}/turns", {"kind": "continue"}),
            ("POST", f"/api/adventures/{aid}/undo", None),
            ("PUT", "/api/settings", {"generation": {"temperature": 0.5}}),
        ):
            answer = client.request(method, path, json=body)
            assert answer.status_code == 503, (method, path, answer.status_code, answer.text)
            assert answer.headers["retry-after"].isdigit()
            detail = answer.json()["detail"]
            assert OUT_OF_REACH in detail and "Nothing was saved" in detail, detail
        page = client.get("/", headers={"Accept": "text/html"})
        assert page.status_code == 503 and page.headers["retry-after"].isdigit()
        assert "Out of reach for a moment" in page.text and "Nothing was saved" in page.text
    assert client.get(f"/api/adventures/{aid}").status_code == 200  # back: no restart
    assert client.post(f"/api/adventures/{aid}/turns", json={"kind": "continue"}).status_code == 200
    tk.db.dispose()


def test_a_turn_that_loses_the_database_while_it_is_written_says_nothing_was_saved(
    isolated_home: Path, quiet_bank: None
) -> None:
    cut: list[object] = []

    def narrate(request) -> str:  # the database goes away while the model writes
        cut.append(store_out_of_reach(tk))
        cut[-1].__enter__()  # type: ignore[attr-defined]
        return "The lamp gutters out."

    tk = Talekeeper(isolated_home, provider_override=ScriptedProvider(narrate, chunk_size=5))
    client = TestClient(
        create_app(tk), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
    )
    aid = client.post(
        "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
    ).json()["id"]
    streamed = client.post(
        f"/api/adventures/{aid}/turns",
        json={"kind": "do", "text": "wait"},
        headers={"Accept": "text/event-stream"},
    )
    cut[-1].__exit__(None, None, None)  # type: ignore[attr-defined]
    events = [b for b in streamed.text.replace("\r\n", "\n").split("\n\n") if b.strip()]
    assert events[0].startswith("event: accepted") and events[-1].startswith("event: error")
    message = json.loads(events[-1].split("data:", 1)[1])["message"]
    assert OUT_OF_REACH in message and "Nothing was saved" in message, message
    assert client.get(f"/api/adventures/{aid}").json()["turns"] == 0  # nothing was written
    tk.db.dispose()


def test_with_accounts_on_the_sign_in_check_says_so_too(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024))
    tk = Talekeeper(isolated_home, accounts=True)
    with tk.db.session() as session:
        accounts.create_user(session, "ada", "correct horse battery")
    client = TestClient(
        create_app(tk), base_url="http://127.0.0.1:8000", raise_server_exceptions=False
    )
    client.post("/login", data={"name": "ada", "password": "correct horse battery"})
    with store_out_of_reach(tk):
        answer = client.get("/api/adventures")  # who is asking: read from the store first
        assert answer.status_code == 503 and OUT_OF_REACH in answer.json()["detail"]
        page = client.get("/scenarios/x", headers={"Accept": "text/html"})
        assert page.status_code == 503 and "Out of reach" in page.text
    assert client.get("/api/adventures").status_code == 200
    tk.db.dispose()


def test_what_is_out_of_reach_is_told_from_what_is_broken() -> None:
    import sqlite3

    from sqlalchemy.exc import OperationalError

    from talekeeper.store.db import database_refusal

    def error(message: str, code: int) -> OperationalError:
        orig = sqlite3.OperationalError(message)
        orig.sqlite_errorcode = code  # type: ignore[attr-defined]
        return OperationalError("SELECT 1", {}, orig)

    assert isinstance(
        database_refusal(error("unable to open database file", 14)), DatabaseUnavailable
    )
    assert isinstance(database_refusal(error("database or disk is full", 13)), DatabaseUnavailable)
    assert database_refusal(error("no such table: nodes", 1)) is None  # a bug: stays a 500
