"""Settings precedence (flag > environment > stored) and validation."""

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from talekeeper.service.app import Talekeeper


def test_stored_then_environment_then_flag(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tk = Talekeeper(isolated_home)
    from talekeeper.service.settings import SettingsUpdate, update_settings

    with tk.db.session() as session:
        update_settings(
            session,
            SettingsUpdate(model={"endpoint": "http://127.0.0.1:9001/v1", "model": "stored"}),
        )
    assert tk.model_settings().model == "stored"
    monkeypatch.setenv("TALEKEEPER_MODEL", "from-env")
    assert tk.model_settings().model == "from-env"
    assert tk.model_settings().endpoint.startswith("http://127.0.0.1:9001")
    flagged = Talekeeper(isolated_home, model_overrides={"model": "from-flag"})
    assert flagged.model_settings().model == "from-flag"


def test_put_settings_validates_and_stores(client: TestClient) -> None:
    response = client.put(
        "/api/settings",
        json={
            "model": {"endpoint": "http://127.0.0.1:11434/v1", "model": "llama3"},
            "generation": {"max_tokens": 100},
        },
    )
    assert response.status_code == 200, response.text
    body = client.get("/api/settings").json()
    assert body["model"]["model"] == "llama3"
    assert body["generation"]["max_tokens"] == 100


def test_bad_settings_are_refused_and_nothing_is_stored(client: TestClient) -> None:
    bad = client.put("/api/settings", json={"generation": {"max_tokens": -5}})
    assert bad.status_code == 422
    unknown = client.put("/api/settings", json={"model": {"nonsense": 1}})
    assert unknown.status_code == 422
    public = client.put("/api/settings", json={"model": {"endpoint": "http://8.8.8.8/v1"}})
    assert public.status_code == 422
    assert "TALEKEEPER_ALLOW_REMOTE_ENDPOINT" in public.json()["detail"]
    assert client.get("/api/settings").json()["model"] == {}


def test_a_request_cannot_allow_remote_endpoints(client: TestClient) -> None:
    client.put(
        "/api/settings", json={"model": {"allow_remote": True, "endpoint": "http://127.0.0.1:1/v1"}}
    )
    assert client.get("/api/settings").json()["effective_model"]["allow_remote"] is False


def test_a_refused_settings_form_shows_what_was_typed_and_stores_nothing(
    client: TestClient,
) -> None:
    """The page renders the stored settings' view with the typed model fields laid over it
    (never the key), and the stored view keeps every key, `has_api_key` only when one is."""
    client.put("/api/settings", json={"model": {"endpoint": "http://127.0.0.1:9001/v1"}})
    before = client.get("/api/settings").json()
    form = {"endpoint": "http://127.0.0.1:9002/v1", "model": "typed-model", "max_tokens": "-5"}
    page = client.post("/settings", data=form)
    assert page.status_code == 422
    assert 'value="typed-model"' in page.text and "http://127.0.0.1:9002/v1" in page.text
    stored = client.get("/api/settings").json()
    assert stored == before and stored["model"]["endpoint"] == "http://127.0.0.1:9001/v1"
    assert set(stored) == {
        "model",
        "generation",
        "effective_model",
        "overridden",
        "model_description",
    }
