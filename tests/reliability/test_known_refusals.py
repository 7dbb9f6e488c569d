"""The server errors an independent fuzz found, each pinned down (issue 25's list): every
one is now a refusal that says what is wrong and changes nothing. The sweep over every
route is tests/reliability/test_hostile_http.py; the error body's bounds are
tests/reliability/test_error_answers.py's. Run on PostgreSQL in `make test`'s second pass.
"""

from __future__ import annotations

import json
from pathlib import Path

from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from talekeeper import accounts
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app

HUGE = "9" * 5000


def test_a_nul_or_a_strange_digit_in_an_owned_address_is_not_found_with_accounts_on(
    isolated_home: Path, monkeypatch
) -> None:
    """The ownership check ran outside the error mapping: on PostgreSQL a NUL in a scenario
    id was a 500 (it cannot be stored, so it cannot be looked up either)."""
    monkeypatch.setattr(accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024))
    tk = Talekeeper(isolated_home, accounts=True)
    with tk.db.session() as session:
        accounts.create_user(session, "ada", "correct horse battery")
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
        client.post("/login", data={"name": "ada", "password": "correct horse battery"})
        for body, kind in (  # the token looked for in a body that is no form
            (b"--x\r\nnonsense\r\n\r\n\x00\xff--x", "multipart/form-data; boundary=x"),
            (b"--x\r\n", "multipart/form-data"),
        ):
            answer = client.post("/settings", content=body, headers={"Content-Type": kind})
            assert answer.status_code == 403 and answer.json()["error"] == "CsrfFailed"
        for path in (
            "/api/scenarios/a%00b",
            "/scenarios/%00",
            "/api/scenarios/%E2%80%8B",
            "/api/adventures/%C2%B2",  # "²": a digit to str.isdigit(), not to int()
            "/adventures/%EF%BC%91",  # a fullwidth one
        ):
            answer = client.get(path)
            assert answer.status_code in (404, 422), (path, answer.status_code, answer.text)
    tk.db.dispose()


def test_half_characters_in_an_imported_file_are_refused_or_mended(client: TestClient) -> None:
    scenario = client.get("/api/scenarios/greywater-lantern/export").json()
    text = json.dumps(scenario).replace("Greywater", "\\ud800Greywater", 1).encode()
    refused = client.post("/api/scenarios/import", content=text)
    assert refused.status_code == 422 and "half of a character" in refused.json()["detail"]
    page = client.post("/scenarios/import", files={"file": ("s.json", text, "application/json")})
    assert page.status_code == 422 and "half of a character" in page.text
    card = b'{"spec": "chara_card_v2", "data": {"name": "\\udfffMaren", "first_mes": "Hi."}}'
    answered = client.post("/api/interop/import?filename=card.json", content=card)
    assert answered.status_code in (200, 422), answered.text
    assert "\ud800" not in answered.text


def test_an_integer_of_thousands_of_digits_is_no_number_anywhere(client: TestClient) -> None:
    """Python refuses to read one (reading it would take a while), with a bare ValueError
    that was a 500 wherever the app read JSON itself."""
    document = '{"id": "x", "title": ' + HUGE + "}"
    for answer in (
        client.post("/api/scenarios/import", content=document.encode()),
        client.post("/api/interop/import?filename=x.json", content=document.encode()),
        client.post("/interop/save", data={"document": document}),
        client.post("/scenarios/new", data={"title": HUGE}),
    ):
        assert answer.status_code < 500, (answer.request.url, answer.text[:300])
    story = client.post(
        "/api/adventures", json={"scenario_id": "greywater-lantern", "answers": {"name": "Ada"}}
    ).json()
    correction = client.post(
        f"/adventures/{story['id']}/state/correct", data={"kind": "json", "events": HUGE}
    )
    assert correction.status_code < 500 and "4,300 digits" in correction.text


def test_a_model_endpoint_that_is_not_a_url_or_does_not_resolve_is_the_settings_fault(
    client: TestClient,
) -> None:
    for endpoint in ("http://010.010.010.010/v1", "http://256.1.1.1/v1", "http://[::1/v1"):
        page = client.post("/settings", data={"endpoint": endpoint, "provider": "openai"})
        assert page.status_code == 422, (endpoint, page.status_code)
        api = client.put("/api/settings", json={"model": {"endpoint": endpoint}})
        assert api.status_code == 422, (endpoint, api.text)
    nowhere = client.put("/api/settings", json={"model": {"endpoint": "http://nowhere.invalid/v1"}})
    assert nowhere.status_code == 422 and "nowhere.invalid" in nowhere.json()["detail"]
    assert client.get("/api/settings").json()["model"].get("endpoint") is None
