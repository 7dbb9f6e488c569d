"""The model-endpoint policy, end to end: what tests/llm/test_llm_policy.py checks on the
policy itself, checked here through the whole app — a turn, the connection test — with
values that never passed the settings page: edited straight into the database, given by
flag or environment. Nothing may leave the machine before the policy has judged it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from talekeeper.llm import policy
from talekeeper.service.app import Talekeeper
from talekeeper.store.db import DATABASE_URL_ENV
from talekeeper.web.app import create_app
from tests.conftest import DEMO

PUBLIC = "http://93.184.216.34/v1"  # a public address (example.com's)
METADATA = "http://169.254.169.254/v1"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[httpx.Request]:
    """Every request that got past the policy to the network layer (none should)."""
    requests: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(503)

    monkeypatch.setattr(policy, "default_transport", lambda: httpx.MockTransport(record))
    return requests


def edit_database(home: Path, model: dict) -> None:
    """What a hand edit or another tool does: bypass the settings page entirely (plain SQL
    on the store the app uses: the SQLite file, or the PostgreSQL database)."""
    engine = create_engine(
        os.environ.get(DATABASE_URL_ENV) or f"sqlite:///{home / 'talekeeper.db'}",
        poolclass=NullPool,
    )
    try:
        with engine.begin() as db:
            db.execute(text("DELETE FROM settings WHERE key = 'model'"))
            db.execute(
                text("INSERT INTO settings(key, value) VALUES ('model', :v)"),
                {"v": json.dumps(model)},
            )
    finally:
        engine.dispose()


def play(tk: Talekeeper) -> httpx.Response:
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
        adventure = client.post(
            "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
        ).json()["id"]
        response = client.post(
            f"/api/adventures/{adventure}/turns", json={"kind": "do", "text": "look"}
        )
        assert client.get(f"/api/adventures/{adventure}").json()["turns"] == 0  # nothing written
        return response


@pytest.mark.parametrize(
    "model",
    [
        {"endpoint": PUBLIC, "model": "m"},
        {"endpoint": PUBLIC, "model": "m", "allow_remote": True},  # the operator's switch, forged
        {"endpoint": METADATA, "model": "m"},
        {"endpoint": "http://[::ffff:169.254.169.254]/v1", "model": "m"},
        {"endpoint": "http://0.0.0.0:11434/v1", "model": "m"},
    ],
)
def test_a_value_edited_into_the_database_is_refused_before_any_request(
    isolated_home: Path, sent: list[httpx.Request], model: dict
) -> None:
    Talekeeper(isolated_home).db.dispose()  # create the database
    edit_database(isolated_home, model)
    response = play(Talekeeper(isolated_home))
    assert response.status_code in (422, 502), response.text
    detail = response.json()["detail"]
    assert "not allowed" in detail, detail
    assert sent == [], "a request left before the policy refused it"


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_an_endpoint_from_a_flag_or_the_environment_is_judged_too(
    isolated_home: Path, sent: list[httpx.Request], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "flag":
        tk = Talekeeper(isolated_home, model_overrides={"endpoint": PUBLIC, "model": "m"})
    else:
        monkeypatch.setenv("TALEKEEPER_ENDPOINT", PUBLIC)
        monkeypatch.setenv("TALEKEEPER_MODEL", "m")
        tk = Talekeeper(isolated_home)
    response = play(tk)
    detail = response.json()["detail"]
    assert "not a loopback or private-network address" in detail
    assert "TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1" in detail  # says how, to the operator
    assert sent == []


def test_metadata_stays_refused_when_the_operator_allows_remote(
    isolated_home: Path, sent: list[httpx.Request], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TALEKEEPER_ALLOW_REMOTE_ENDPOINT", "1")
    tk = Talekeeper(isolated_home)
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
        saved = client.put("/api/settings", json={"model": {"endpoint": METADATA, "model": "m"}})
        assert saved.status_code == 422 and "metadata" in saved.json()["detail"]
        assert client.get("/api/settings").json()["model"] == {}
    edit_database(isolated_home, {"endpoint": METADATA, "model": "m"})
    assert "metadata" in play(Talekeeper(isolated_home)).json()["detail"]
    assert sent == []


def test_the_connection_test_reports_a_refusal_plainly(
    isolated_home: Path, sent: list[httpx.Request]
) -> None:
    Talekeeper(isolated_home).db.dispose()
    edit_database(isolated_home, {"endpoint": PUBLIC, "model": "m"})
    with TestClient(
        create_app(Talekeeper(isolated_home)), base_url="http://127.0.0.1:8000"
    ) as client:
        response = client.post("/api/settings/test")
    assert response.status_code in (200, 422), response.text
    assert "not allowed" in response.text
    assert sent == []
