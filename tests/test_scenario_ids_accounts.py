"""With accounts on, a scenario id tells no player about another player's scenarios.

Scenario ids are one namespace, so a player making or importing a scenario whose id another
player's scenario holds must see exactly what they would see if nobody held it: the same
status, message, notes and id. Each way of making a scenario is tried twice by Bob, once
while Ada has a scenario with that id (made with accounts on, or made before accounts and
adopted by her) and once while nobody does, and the answers are compared whole. Bob's own
collisions — with his own scenarios and the built-in ones — still refuse or rename as
before, and with accounts off nothing changes.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from talekeeper import accounts
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import scenarios
from talekeeper.service.app import Talekeeper
from talekeeper.store import owner
from talekeeper.web.app import create_app

PASSWORD = "correct horse battery"
DEMO = "greywater-lantern"
NAME = "moonlit-harbour"


@pytest.fixture(autouse=True)
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )


def document(name: str = NAME, title: str = "Moonlit Harbour") -> dict:
    return {**scenarios.new_scenario(title, name), "description": "Fog and bells."}


@pytest.fixture
def table(isolated_home: Path) -> Iterator[dict]:
    tk = Talekeeper(
        isolated_home, provider_override=ScriptedProvider(["The tide turns."] * 8), accounts=True
    )
    with tk.db.session() as session:
        ada_id = accounts.create_user(session, "ada", PASSWORD).id
        bob_id = accounts.create_user(session, "bob", PASSWORD).id
    app = create_app(tk)
    with (
        TestClient(app, base_url="http://127.0.0.1:8000") as ada,
        TestClient(app, base_url="http://127.0.0.1:8000") as bob,
    ):
        for client, name in ((ada, "ada"), (bob, "bob")):
            client.post("/login", data={"name": name, "password": PASSWORD})
            client.headers["X-CSRF-Token"] = client.get("/api/account").json()["csrf_token"]
        yield {"tk": tk, "ada": ada, "bob": bob, "ada_id": ada_id, "bob_id": bob_id}
    tk.db.dispose()


def ada_makes(table: dict, name: str) -> Callable[[], None]:
    """Ada makes a scenario with id `name` with accounts on; returns how to remove it."""
    made = table["ada"].post("/api/scenarios", json=document(name, "Ada's secret"))
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    return lambda: table["ada"].delete(f"/api/scenarios/{sid}")


def ada_adopts(table: dict, name: str) -> Callable[[], None]:
    """A scenario made before accounts were on, with the plain id `name`, adopted by Ada."""
    tk = table["tk"]
    with owner.acting_as(None):
        scenarios.create(tk, document(name, "Ada's secret"))
    with tk.db.session() as session:
        accounts.adopt_unowned(session, table["ada_id"])
    assert table["ada"].get(f"/api/scenarios/{name}").status_code == 200
    return lambda: table["ada"].delete(f"/api/scenarios/{name}")


def _answer(response) -> tuple:
    """Everything Bob can see of an answer, less the moments in it."""
    text = re.sub(r'"(created_at|updated_at|exported_at)": ?"[^"]*"', "", response.text)
    return response.status_code, response.headers.get("location"), text


def bob_sees_the_same(table: dict, name: str, attempt: Callable[[], object]) -> None:
    """Bob's answer with Ada holding `name` (either way) equals his answer with nobody
    holding it. `attempt` returns the answer and undoes what Bob made."""
    answers = []
    for holds in (ada_makes, ada_adopts, None):
        undo = holds(table, name) if holds else None
        answers.append(attempt())
        if undo:
            assert undo().status_code == 204
    assert answers[0] == answers[1] == answers[2]
    assert "Ada" not in str(answers[2])


def _undo_bob(table: dict) -> None:
    for s in table["bob"].get("/api/scenarios").json():
        if not s["builtin"]:
            assert table["bob"].delete(f"/api/scenarios/{s['id']}").status_code == 204


def test_creating_with_an_id_ada_has_answers_as_if_nobody_had_it(table: dict) -> None:
    def attempt() -> tuple:
        seen = _answer(table["bob"].post("/api/scenarios", json=document()))
        _undo_bob(table)
        return seen

    bob_sees_the_same(table, NAME, attempt)
    made = table["bob"].post("/api/scenarios", json=document()).json()
    assert made["id"] == f"{NAME}~{table['bob_id']}" and made["data"]["id"] == NAME


def test_importing_a_file_with_an_id_ada_has_answers_as_if_nobody_had_it(table: dict) -> None:
    raw = json.dumps({"format": "talekeeper-scenario", "version": 1, "scenario": document()})

    def api() -> tuple:
        seen = _answer(table["bob"].post("/api/scenarios/import", content=raw))
        _undo_bob(table)
        return seen

    def page() -> tuple:
        files = {"file": ("world.json", io.BytesIO(raw.encode()), "application/json")}
        sent = table["bob"].post("/scenarios/import", files=files, follow_redirects=False)
        shown = table["bob"].get(sent.headers["location"])  # with the flash message
        _undo_bob(table)
        return _answer(sent), _answer(shown)

    bob_sees_the_same(table, NAME, api)
    bob_sees_the_same(table, NAME, page)
    imported = table["bob"].post("/api/scenarios/import", content=raw).json()
    assert imported["notes"] == [] and imported["data"]["id"] == NAME


def test_the_other_ways_of_making_a_scenario_answer_alike_too(table: dict) -> None:
    bob = table["bob"]

    def titled() -> tuple:
        sent = bob.post("/scenarios/new", data={"title": "Moonlit Harbour"}, follow_redirects=False)
        _undo_bob(table)
        return _answer(sent)

    def duplicated() -> tuple:
        seen = _answer(bob.post(f"/api/scenarios/{DEMO}/duplicate"))
        _undo_bob(table)
        return seen

    card = json.dumps(
        {
            "spec": "chara_card_v2",
            "spec_version": "2.0",
            "data": {"name": "Moonlit Harbour", "first_mes": "Fog rolls in.", "description": "A"},
        }
    )

    def previewed_and_saved() -> tuple:
        preview = bob.post("/api/interop/import?filename=world.json", content=card)
        saved = bob.post(
            "/api/interop/save", json={"scenario": preview.json()["items"][0]["scenario"]}
        )
        _undo_bob(table)
        return _answer(preview), _answer(saved)

    bob_sees_the_same(table, NAME, titled)
    bob_sees_the_same(table, f"{DEMO}-copy", duplicated)
    bob_sees_the_same(table, NAME, previewed_and_saved)


def test_an_adventure_bundle_adds_its_scenario_alike(table: dict) -> None:
    bob = table["bob"]
    sid = bob.post("/api/scenarios", json=document()).json()["id"]
    aid = bob.post("/api/adventures", json={"scenario_id": sid, "answers": {"name": "Bob"}})
    assert aid.status_code == 201, aid.text
    bundle = bob.get(f"/api/adventures/{aid.json()['id']}/export").content
    assert bob.delete(f"/api/adventures/{aid.json()['id']}").status_code == 204
    _undo_bob(table)

    def attempt() -> tuple:
        imported = bob.post("/api/adventures/import", content=bundle)
        assert imported.status_code == 201, imported.text
        listed = [(s["id"], s["title"]) for s in bob.get("/api/scenarios").json()]
        bob.delete(f"/api/adventures/{imported.json()['id']}")
        _undo_bob(table)
        return imported.json()["notes"], listed

    answers = []
    for holds in (ada_makes, ada_adopts, None):
        undo = holds(table, NAME) if holds else None
        answers.append(attempt())
        if undo:
            undo()
    assert answers[0] == answers[1] == answers[2]
    assert (f"{NAME}~{table['bob_id']}", "Moonlit Harbour") in answers[2][1]


def test_bobs_own_collisions_refuse_and_rename_as_before(table: dict) -> None:
    bob = table["bob"]
    assert bob.post("/api/scenarios", json=document()).status_code == 201
    again = bob.post("/api/scenarios", json=document())
    assert again.status_code == 422 and f"a scenario with id '{NAME}' already exists" in again.text
    builtin = bob.post("/api/scenarios", json=document(DEMO))
    assert builtin.status_code == 422 and f"'{DEMO}' already exists" in builtin.text
    imported = bob.post("/api/scenarios/import", content=json.dumps(document()))
    assert imported.json()["data"]["id"] == f"{NAME}-2"
    assert imported.json()["notes"] == [
        f"A scenario with id '{NAME}' already exists, so this one was imported as '{NAME}-2'."
    ]
    demo = bob.post("/api/scenarios/import", content=json.dumps(document(DEMO)))
    assert demo.json()["data"]["id"] == f"{DEMO}-2" and "already exists" in demo.json()["notes"][0]
    # One made before accounts and adopted by Bob collides too: it is his.
    with owner.acting_as(None):
        scenarios.create(table["tk"], document("old-world"))
    with table["tk"].db.session() as session:
        accounts.adopt_unowned(session, table["bob_id"])
    assert bob.post("/api/scenarios", json=document("old-world")).status_code == 422


def test_an_owner_marked_id_works_in_every_address(table: dict) -> None:
    bob, ada = table["bob"], table["ada"]
    made = bob.post("/api/scenarios", json=document()).json()
    sid = made["id"]
    assert bob.get(f"/scenarios/{sid}").status_code == 200
    data = bob.get(f"/api/scenarios/{sid}").json()["data"]
    assert bob.put(f"/api/scenarios/{sid}", json={**data, "title": "Renamed"}).status_code == 200
    assert bob.put(f"/api/scenarios/{sid}", json={**data, "id": sid}).status_code == 200
    moved = bob.put(f"/api/scenarios/{sid}", json={**data, "id": "elsewhere"})
    assert moved.status_code == 422 and f"it is '{NAME}'" in moved.text
    exported = bob.get(f"/api/scenarios/{sid}/export")
    assert f'filename="{NAME}.talekeeper.json"' in exported.headers["content-disposition"]
    assert exported.json()["scenario"]["id"] == NAME
    copy = bob.post(f"/api/scenarios/{sid}/duplicate").json()
    assert copy["data"]["id"] == f"{NAME}-copy"
    started = bob.post("/api/adventures", json={"scenario_id": sid, "answers": {"name": "Bob"}})
    assert started.status_code == 201, started.text
    assert ada.get(f"/api/scenarios/{sid}").status_code == 404
    assert ada.get(f"/scenarios/{sid}").status_code == 404
    assert bob.delete(f"/api/scenarios/{sid}").status_code == 204


def test_an_id_too_long_for_the_owner_mark_is_refused_or_shortened(table: dict) -> None:
    long = "a" * 80
    made = table["bob"].post("/api/scenarios", json=document(long))
    assert made.status_code == 422 and "at most" in made.text
    imported = table["bob"].post("/api/scenarios/import", content=json.dumps(document(long)))
    assert imported.status_code == 201 and "too long" in imported.json()["notes"][0]
    assert len(imported.json()["id"]) <= scenarios.MAX_ID


def test_with_accounts_off_ids_are_as_before(client: TestClient) -> None:
    made = client.post("/api/scenarios", json=document())
    assert made.status_code == 201 and made.json()["id"] == NAME == made.json()["data"]["id"]
    again = client.post("/api/scenarios", json=document())
    assert again.status_code == 422 and "already exists" in again.text
    imported = client.post("/api/scenarios/import", content=json.dumps(document()))
    assert imported.json()["id"] == f"{NAME}-2"
    assert "already exists" in imported.json()["notes"][0]
    long = client.post("/api/scenarios", json=document("b" * 80))
    assert long.status_code == 201 and long.json()["id"] == "b" * 80
