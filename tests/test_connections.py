"""Connection profiles, the player's privacy choice and keys at rest, end to end: a fake
OpenRouter on loopback stands in for the real one behind the real endpoint policy
(tests/llm/standin.py), so the permission, the key and the model list are all exercised
the way a player's session would, and nothing reaches the internet."""

from __future__ import annotations

import gzip
import json
import logging
import os
import ssl
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from talekeeper.service.app import Talekeeper
from talekeeper.store.db import DATABASE_URL_ENV
from talekeeper.web.app import create_app
from tests.conftest import DEMO
from tests.llm.fakeserver import FakeOpenAIServer, FakeReply
from tests.llm.standin import PUBLIC_ADDRESS, StandIn, resolver_for

KEY = "sk-or-v1-TESTKEY-7f3a9c2e51d4b6a8"
MODELS = {
    "object": "list",
    "data": [
        {
            "id": "meta-llama/llama-3.3-70b-instruct",
            "name": "Meta: Llama 3.3 70B Instruct",
            "context_length": 131072,
            "pricing": {"prompt": "0.0000001", "completion": "0.0000003"},
            "supported_parameters": ["temperature", "top_p", "frequency_penalty", "min_p"],
        },
        {
            "id": "mistralai/mistral-nemo:free",
            "name": "Mistral Nemo (free)",
            "context_length": 32768,
            "pricing": {"prompt": "0", "completion": "0"},
        },
    ],
}


@pytest.fixture
def openrouter() -> Iterator[FakeOpenAIServer]:
    """The fake service: its model list as OpenRouter answers it; echoes the key in errors
    (a badly behaved proxy) so a leak would show."""
    with FakeOpenAIServer(extra={("GET", "/v1/models"): MODELS}) as server:
        yield server


@pytest.fixture
def app(isolated_home: Path, openrouter: FakeOpenAIServer) -> Iterator[tuple[Talekeeper, StandIn]]:
    standin = StandIn(openrouter.root)
    tk = Talekeeper(
        isolated_home,
        resolver=resolver_for({"openrouter.ai": PUBLIC_ADDRESS}),
        transport=standin,
    )
    yield tk, standin
    tk.db.dispose()


@pytest.fixture
def client(app: tuple[Talekeeper, StandIn]) -> Iterator[TestClient]:
    with TestClient(create_app(app[0]), base_url="http://127.0.0.1:8000") as test_client:
        yield test_client


PROFILE = {"name": "OpenRouter", "service": "openrouter", "api_key": KEY}


def _raw_rows(home: Path) -> str:
    """Every settings and profile row as stored (SQLite file or PostgreSQL), as text."""
    engine = create_engine(
        os.environ.get(DATABASE_URL_ENV) or f"sqlite:///{home / 'talekeeper.db'}",
        poolclass=NullPool,
    )
    try:
        with engine.begin() as db:
            rows = [*db.execute(text("SELECT * FROM connection_profiles"))]
            rows += [*db.execute(text("SELECT * FROM settings"))]
    finally:
        engine.dispose()
    return repr(rows)


def test_a_hosted_service_is_refused_until_the_player_allows_it_by_name(
    client: TestClient, app: tuple[Talekeeper, StandIn]
) -> None:
    _tk, standin = app
    refused = client.post("/api/profiles", json=PROFILE)
    assert refused.status_code == 422
    assert "openrouter.ai" in refused.json()["detail"] and not standin.delivered
    allowed = client.put("/api/hosted-services/openrouter.ai")
    assert allowed.status_code == 200
    assert allowed.json()["sentence"] == (
        "Your story, its cards and state are sent to openrouter.ai."
    )
    created = client.post("/api/profiles", json=PROFILE)
    assert created.status_code == 201, created.text
    profile = created.json()
    assert profile["has_key"] is True and profile["allowed"] is True
    assert profile["endpoint"] == "https://openrouter.ai/api/v1"
    # Another host is not allowed by that permission: the name is what was allowed.
    other = client.post(
        "/api/profiles",
        json={"name": "Other", "service": "custom", "endpoint": f"http://{PUBLIC_ADDRESS}/v1"},
    )
    assert other.status_code == 422 and "TALEKEEPER_ALLOW_REMOTE_ENDPOINT" in other.json()["detail"]


def test_the_model_list_shows_context_and_a_cost_per_turn(
    client: TestClient, openrouter: FakeOpenAIServer
) -> None:
    client.put("/api/hosted-services/openrouter.ai")
    pid = client.post("/api/profiles", json=PROFILE).json()["id"]
    listing = client.get(f"/api/profiles/{pid}/models").json()
    llama, nemo = listing["models"]
    assert llama["context"] == 131072 and nemo["context"] == 32768
    # 16,384 prompt tokens at $0.0000001 + 220 reply tokens at $0.0000003 ≈ $0.0017
    assert llama["cost_per_turn"] == "about $0.002" and nemo["cost_per_turn"] == "free"
    assert "16,384 prompt tokens" in listing["turn_size"]
    assert openrouter.requests[-1].headers["Authorization"] == f"Bearer {KEY}"
    page = client.get(f"/settings/profiles/{pid}/models").text
    assert "131,072 tokens of context" in page and "about $0.002 a turn" in page


def test_play_through_an_allowed_service_then_take_the_permission_back(
    client: TestClient, openrouter: FakeOpenAIServer, app: tuple[Talekeeper, StandIn]
) -> None:
    _tk, standin = app
    client.put("/api/hosted-services/openrouter.ai")
    pid = client.post(
        "/api/profiles", json={**PROFILE, "model": "meta-llama/llama-3.3-70b-instruct"}
    ).json()["id"]
    assert client.put("/api/connection", json={"use": pid}).json()["sent_to"] == "openrouter.ai"
    aid = client.post("/api/adventures", json={"scenario_id": DEMO}).json()["id"]
    play = client.get(f"/adventures/{aid}").text
    assert 'id="sent-to"' in play and "openrouter.ai" in play
    openrouter.queue(FakeReply("Maren hands you the lantern without a word."))
    done = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wave"})
    assert done.status_code == 200, done.text
    sent = openrouter.generation_requests[-1]
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "meta-llama/llama-3.3-70b-instruct"
    assert all(r.url.host == PUBLIC_ADDRESS for r in standin.delivered)  # pinned, checked

    delivered = len(standin.delivered)
    assert client.delete("/api/hosted-services/openrouter.ai").status_code == 204
    refused = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wait"})
    assert refused.status_code == 502
    assert "allow openrouter.ai by name on the Settings page" in refused.json()["detail"]
    assert len(standin.delivered) == delivered  # nothing left once the permission went
    assert client.get(f"/api/adventures/{aid}").json()["turns"] == 1


def test_the_key_is_sealed_at_rest_and_appears_in_no_answer_log_insights_or_export(
    client: TestClient,
    openrouter: FakeOpenAIServer,
    isolated_home: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    answers: list[str] = []

    def call(method: str, url: str, **kwargs) -> dict:
        response = client.request(method, url, **kwargs)
        answers.append(response.text)
        return response.json() if "json" in response.headers.get("content-type", "") else {}

    call("PUT", "/api/hosted-services/openrouter.ai")
    pid = call("POST", "/api/profiles", json={**PROFILE, "model": "mistralai/mistral-nemo:free"})[
        "id"
    ]
    call("PUT", "/api/connection", json={"use": pid})
    call("GET", f"/api/profiles/{pid}")
    call("GET", "/api/profiles")
    call("GET", f"/api/profiles/{pid}/models")
    call("GET", "/api/settings")
    call("GET", "/api/connection")
    aid = call("POST", "/api/adventures", json={"scenario_id": DEMO})["id"]
    openrouter.queue(FakeReply("The tide turns."))
    turn = call("POST", f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wave"})
    node = turn["turn"]["id"]
    call("GET", f"/api/adventures/{aid}/turns/{node}/insights")
    call("GET", f"/api/adventures/{aid}/insights/next")
    # A server that quotes the key back in its error (a proxy, a fake): blotted out.
    openrouter.queue(FakeReply(status=401, error=f"Invalid key {KEY}"))
    call("POST", f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "wait"})
    for page in (
        "/settings",
        f"/settings/profiles/{pid}",
        f"/settings/profiles/{pid}/models",
        f"/adventures/{aid}",
        f"/adventures/{aid}/insights",
        f"/adventures/{aid}/samplers",
    ):
        answers.append(client.get(page).text)
    export = client.get(f"/adventures/{aid}/export")
    assert export.status_code == 200
    answers.append(gzip.decompress(export.content).decode())  # the bundle, unpacked
    assert "[your API key]" in "".join(answers)  # the refusal was shown, without the key
    for where, found in (
        ("an answer", "\n".join(answers)),
        ("a log record", "\n".join(r.getMessage() for r in caplog.records)),
        ("a stored row", _raw_rows(isolated_home)),
    ):
        assert KEY not in found, f"the key appears in {where}"
        assert "TESTKEY" not in found, f"part of the key appears in {where}"
    secret = isolated_home / "secret.key"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_the_key_is_replaced_never_read_back_and_can_be_forgotten(
    client: TestClient, openrouter: FakeOpenAIServer
) -> None:
    client.put("/api/hosted-services/openrouter.ai")
    pid = client.post("/api/profiles", json=PROFILE).json()["id"]
    body = {"name": "OpenRouter", "service": "openrouter", "model": "m"}
    kept = client.put(f"/api/profiles/{pid}", json=body)  # no key given: the stored one stays
    assert kept.status_code == 200 and kept.json()["has_key"] is True
    client.put(f"/api/profiles/{pid}", json={**body, "api_key": "sk-or-v1-NEWKEY"})
    client.get(f"/api/profiles/{pid}/models")
    assert openrouter.requests[-1].headers["Authorization"] == "Bearer sk-or-v1-NEWKEY"
    forgotten = client.put(f"/api/profiles/{pid}", json={**body, "forget_key": True})
    assert forgotten.status_code == 422  # OpenRouter needs one: refused, nothing changed
    assert "needs an API key" in forgotten.json()["detail"]
    assert client.get(f"/api/profiles/{pid}").json()["has_key"] is True


def test_a_plain_key_from_an_older_release_is_sealed_at_start(isolated_home: Path) -> None:
    tk = Talekeeper(isolated_home)
    tk.db.dispose()
    engine = create_engine(
        os.environ.get(DATABASE_URL_ENV) or f"sqlite:///{isolated_home / 'talekeeper.db'}",
        poolclass=NullPool,
    )
    with engine.begin() as db:
        db.execute(text("DELETE FROM settings WHERE key = 'model'"))
        db.execute(
            text("INSERT INTO settings(key, value) VALUES ('model', :v)"),
            {"v": json.dumps({"endpoint": "http://127.0.0.1:9/v1", "api_key": "plain-OLDKEY"})},
        )
    engine.dispose()
    tk = Talekeeper(isolated_home)
    try:
        assert "OLDKEY" not in _raw_rows(isolated_home)
        assert tk.model_settings().key() == "plain-OLDKEY"
        with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
            stored = client.get("/api/settings").json()["model"]
        assert stored["has_api_key"] is True and "api_key" not in stored
    finally:
        tk.db.dispose()


def test_each_adventure_keeps_its_own_connection_and_the_built_in_is_one_switch_away(
    client: TestClient, openrouter: FakeOpenAIServer
) -> None:
    with FakeOpenAIServer(["A gull cries."]) as local:
        pid = client.post(
            "/api/profiles",
            json={"name": "My llama", "service": "llamacpp", "endpoint": local.url, "model": "m"},
        ).json()["id"]
        first = client.post("/api/adventures", json={"scenario_id": DEMO}).json()["id"]
        second = client.post("/api/adventures", json={"scenario_id": DEMO}).json()["id"]
        view = client.put(f"/api/adventures/{first}/connection", json={"use": pid}).json()
        assert view["chosen_by"] == "adventure" and view["use"] == pid
        assert client.get(f"/api/adventures/{second}/connection").json()["use"] == "server"
        done = client.post(f"/api/adventures/{first}/turns", json={"kind": "do", "text": "look"})
        assert done.json()["turn"]["narration"] == "A gull cries."
        assert len(local.generation_requests) == 1
        # The play page's switch: one click back to the built-in model.
        note = client.post(f"/adventures/{first}/connection", data={"use": "embedded"}).text
        assert "tiny demo model" in note and 'id="use-builtin"' not in note
        assert client.get(f"/api/adventures/{first}/connection").json()["use"] == "embedded"
        # …and back to following the default.
        client.put(f"/api/adventures/{first}/connection", json={"use": None})
        assert client.get(f"/api/adventures/{first}/connection").json()["chosen_by"] == "none"
    unknown = client.put(f"/api/adventures/{first}/connection", json={"use": 999})
    assert unknown.status_code == 404


def test_a_deleted_profile_falls_back_and_bad_input_changes_nothing(client: TestClient) -> None:
    with FakeOpenAIServer([]) as local:
        body = {"name": "Local", "service": "vllm", "endpoint": local.url}
        pid = client.post("/api/profiles", json=body).json()["id"]
        client.put("/api/connection", json={"use": pid})
        for bad in (
            {**body, "name": ""},
            {**body, "service": "nonsense"},
            {**body, "endpoint": "ftp://127.0.0.1/v1"},
            {**body, "endpoint": "http://169.254.169.254/v1"},
            {**body, "context_budget": 5},
            {**body, "samplers": {"min_p": 7}},
            {**body, "unknown": 1},
        ):
            assert client.put(f"/api/profiles/{pid}", json=bad).status_code == 422, bad
        assert client.get(f"/api/profiles/{pid}").json()["endpoint"] == local.url
        duplicate = client.post("/api/profiles", json=body)
        assert duplicate.status_code == 422 and "already" in duplicate.json()["detail"]
        assert client.delete(f"/api/profiles/{pid}").status_code == 204
        assert client.get("/api/connection").json()["use"] == "server"


def test_with_accounts_only_a_host_allows_a_service_and_players_reach_only_those(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argon2 import PasswordHasher

    from talekeeper import accounts

    monkeypatch.setattr(
        accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )
    tk = Talekeeper(
        isolated_home, accounts=True, resolver=resolver_for({"openrouter.ai": PUBLIC_ADDRESS})
    )
    with tk.db.session() as session:
        accounts.create_user(session, "hana", "correct horse battery", role="host")
        accounts.create_user(session, "pip", "correct horse battery")
    app = create_app(tk)
    with (
        TestClient(app, base_url="http://127.0.0.1:8000") as host,
        TestClient(app, base_url="http://127.0.0.1:8000") as player,
    ):
        for client, name in ((host, "hana"), (player, "pip")):
            client.post("/login", data={"name": name, "password": "correct horse battery"})
            client.headers["X-CSRF-Token"] = client.get("/api/account").json()["csrf_token"]
        assert player.put("/api/hosted-services/openrouter.ai").status_code == 403
        assert "Only a host" in player.get("/settings").text
        refused = player.post("/api/profiles", json=PROFILE)
        assert refused.status_code == 403 and "allowed" in refused.json()["detail"]
        local = player.post(
            "/api/profiles",
            json={"name": "LAN", "service": "llamacpp", "endpoint": "http://192.168.1.9:8080/v1"},
        )
        assert local.status_code == 403  # a server on the host's network is the host's to name
        assert host.put("/api/hosted-services/openrouter.ai").status_code == 200
        mine = player.post("/api/profiles", json=PROFILE)
        assert mine.status_code == 201, mine.text
        assert host.get("/api/profiles").json() == []  # each player's own
        assert player.delete("/api/hosted-services/openrouter.ai").status_code == 403
    tk.db.dispose()


def test_a_server_over_tls_is_verified_against_its_certificate_authority(
    isolated_home: Path,
) -> None:
    """A fake server over HTTPS with a test CA (trustme): refused while the CA is unknown
    (verification cannot be turned off), played once the transport trusts that CA."""
    import httpx
    import trustme

    ca = trustme.CA()
    served = ca.issue_cert("127.0.0.1", "localhost")
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.configure_cert(server_context)
    with FakeOpenAIServer(["The lamp gutters."], ssl_context=server_context) as server:
        assert server.url.startswith("https://")
        body = {"name": "TLS box", "service": "vllm", "endpoint": server.url, "model": "fake-model"}
        untrusting = Talekeeper(isolated_home)
        with TestClient(create_app(untrusting), base_url="http://127.0.0.1:8000") as client:
            pid = client.post("/api/profiles", json=body).json()["id"]
            client.put("/api/connection", json={"use": pid})
            aid = client.post("/api/adventures", json={"scenario_id": DEMO}).json()["id"]
            refused = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "a"})
            assert refused.status_code == 502
            assert "could not be verified" in refused.json()["detail"]
            assert not server.generation_requests
        untrusting.db.dispose()
        client_context = ssl.create_default_context()
        ca.configure_trust(client_context)
        trusting = Talekeeper(
            isolated_home, transport=httpx.AsyncHTTPTransport(verify=client_context)
        )
        with TestClient(create_app(trusting), base_url="http://127.0.0.1:8000") as client:
            done = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "a"})
            assert done.status_code == 200, done.text
            assert done.json()["turn"]["narration"] == "The lamp gutters."
        trusting.db.dispose()


def test_the_terminal_lists_and_switches_connections_with_model(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from talekeeper.service import profiles
    from tests.test_terminal_ux import run_play, start

    with FakeOpenAIServer(["The bell tolls once."]) as local:
        tk = Talekeeper(isolated_home)
        profiles.keep(
            tk,
            profiles.ProfileIn(name="Den box", service="llamacpp", endpoint=local.url, model="m"),
        )
        aid = start(tk)
        out = run_play(
            tk, ["/model", "/model 3", "listen", "/model 9", "/model built-in"], monkeypatch,
            adventure_id=aid,
        )  # fmt: skip
        assert "Den box — m" in out and "◀ narrating" in out
        assert "Narrating with OpenAI-compatible at " in out
        assert "The bell tolls once." in out and len(local.generation_requests) == 1
        assert "There is no connection 9." in out
        assert profiles.connection_view(tk, aid).use == "embedded"
        tk.db.dispose()


def test_the_migration_makes_the_table_the_model_describes(isolated_home: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from talekeeper.store.models import Base

    tk = Talekeeper(isolated_home)
    try:
        with tk.db.engine.connect() as connection:
            diffs = compare_metadata(MigrationContext.configure(connection), Base.metadata)
        ours = [d for d in diffs if "connection_profiles" in repr(d)]
        assert ours == []
    finally:
        tk.db.dispose()


def test_the_server_settings_key_is_sealed_too_and_forgotten_on_request(
    client: TestClient, isolated_home: Path
) -> None:
    with FakeOpenAIServer(["Waves."]) as local:
        saved = client.put(
            "/api/settings", json={"model": {"endpoint": local.url, "api_key": "sk-SERVERKEY"}}
        )
        assert saved.status_code == 200 and "SERVERKEY" not in saved.text
        assert saved.json()["model"]["has_api_key"] is True
        assert "SERVERKEY" not in _raw_rows(isolated_home)
        client.post("/api/settings/test")
        assert local.requests[-1].headers["Authorization"] == "Bearer sk-SERVERKEY"
        page = client.get("/settings").text
        assert "SERVERKEY" not in page and "a key is stored" in page
        client.put("/api/settings", json={"model": {"model": "other"}})  # the key stays
        assert client.get("/api/settings").json()["model"]["has_api_key"] is True
        client.put("/api/settings", json={"model": {"api_key": None}})
        assert "has_api_key" not in client.get("/api/settings").json()["model"]


def test_a_key_that_can_no_longer_be_read_is_said_plainly_and_pages_still_open(
    client: TestClient, isolated_home: Path
) -> None:
    with FakeOpenAIServer(["Waves."]) as local:
        body = {"name": "Box", "service": "vllm", "endpoint": local.url, "api_key": "sk-BOXKEY"}
        pid = client.post("/api/profiles", json=body).json()["id"]
        client.put("/api/connection", json={"use": pid})
        (isolated_home / "secret.key").write_bytes(b"")  # the key file lost…
        from cryptography.fernet import Fernet

        (isolated_home / "secret.key").write_bytes(Fernet.generate_key())  # …and made anew
        client.app.state.tk.keys._fernet = None  # (as a restart would read it)
        aid = client.post("/api/adventures", json={"scenario_id": DEMO}).json()["id"]
        refused = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "a"})
        assert refused.status_code == 422 and "Enter the key again" in refused.json()["detail"]
        assert not local.generation_requests
        for page in ("/settings", f"/adventures/{aid}", "/api/settings", "/api/connection"):
            assert client.get(page).status_code == 200, page
        fixed = client.put(f"/api/profiles/{pid}", json={**body, "api_key": "sk-BOXKEY2"})
        assert fixed.status_code == 200
        local.queue("Waves.")
        done = client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "a"})
        assert done.status_code == 200, done.text


def test_the_profile_page_saves_the_fields_it_shows_and_keeps_the_rest(
    client: TestClient,
) -> None:
    """The page's form lays its fields over the profile's view: sampler fields replace the
    profile's samplers only when the page showed them; a refused value changes nothing."""
    local = {"name": "Den", "service": "custom", "endpoint": "http://127.0.0.1:9/v1"}
    created = client.post("/api/profiles", json={**local, "samplers": {"min_p": 0.1}})
    assert created.status_code == 201, created.text
    pid = created.json()["id"]
    page = f"/settings/profiles/{pid}"
    assert client.post(page, data={"model": "m1"}, follow_redirects=False).status_code == 303
    kept = client.get(f"/api/profiles/{pid}").json()
    assert kept["model"] == "m1" and kept["samplers"] == {"min_p": 0.1}
    assert kept["name"] == "Den" and kept["endpoint"] == "http://127.0.0.1:9/v1"
    shown = {"samplers_shown": "1", "top_k": "40"}
    assert client.post(page, data=shown, follow_redirects=False).status_code == 303
    assert client.get(f"/api/profiles/{pid}").json()["samplers"] == {"top_k": 40}
    refused = client.post(page, data={"samplers_shown": "1", "top_k": "many"})
    assert refused.status_code == 422 and "top_k" in refused.text
    assert client.get(f"/api/profiles/{pid}").json()["samplers"] == {"top_k": 40}
