"""Export then import (issue 27, item 9): the copy is told apart from the adventure it
copies in every list, and keeps its sampler values."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests import pg
from tests.interop_helpers import export_bytes, import_bytes


def _import(client: TestClient, data: bytes) -> dict:
    answer = client.post("/api/adventures/import", content=data)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_an_imported_twin_is_named_apart_in_both_lists(
    client: TestClient, adventure_id: int
) -> None:
    title = client.get(f"/api/adventures/{adventure_id}").json()["title"]
    data = client.get(f"/api/adventures/{adventure_id}/export").content
    first, second = _import(client, data), _import(client, data)
    assert first["title"] == f"{title} (imported)"
    assert second["title"] == f"{title} (imported 2)"
    listed = [a["title"] for a in client.get("/api/adventures").json()]
    assert sorted(listed) == sorted([title, f"{title} (imported)", f"{title} (imported 2)"])
    home = client.get("/").text
    assert home.count(f"{title} (imported)") >= 2  # both copies, by name, on the home page
    # Renamed, the original no longer collides: a copy of the copy is named from its own title.
    client.patch(f"/api/adventures/{adventure_id}", json={"title": "Storm night"})
    assert _import(client, data)["title"] == title


def test_a_scenario_added_with_an_import_is_named_apart_from_its_twin(
    client: TestClient,
) -> None:
    scenario = client.get("/api/scenarios/greywater-lantern").json()["data"]
    mine = {**scenario, "id": "my-lantern", "title": "My Lantern"}
    assert client.post("/api/scenarios", json=mine).status_code == 201
    started = client.post(
        "/api/adventures", json={"scenario_id": "my-lantern", "answers": {"name": "Ada"}}
    ).json()
    data = client.get(f"/api/adventures/{started['id']}/export").content
    edited = {**mine, "description": "Changed after the export."}
    assert client.put("/api/scenarios/my-lantern", json=edited).status_code == 200
    imported = _import(client, data)  # its scenario differs from the one here now: added
    assert any("added to your scenarios" in note for note in imported["notes"])
    titles = [s["title"] for s in client.get("/api/scenarios").json()]
    assert titles.count("My Lantern") == 1 and "My Lantern (imported)" in titles
    page = client.get("/scenarios").text
    assert "My Lantern (imported)" in re.sub(r"\s+", " ", page)


def test_an_import_keeps_the_adventures_samplers(client: TestClient, adventure_id: int) -> None:
    assert (
        client.put("/api/sampler-presets/Careful", json={"min_p": 0.1, "top_k": 30}).status_code
        == 200
    )
    chosen = {"preset": "Careful", "values": {"top_k": 12, "seed": 7}}
    assert client.put(f"/api/adventures/{adventure_id}/samplers", json=chosen).status_code == 200
    before = client.get(f"/api/adventures/{adventure_id}/samplers").json()
    data = client.get(f"/api/adventures/{adventure_id}/export").content
    copy = _import(client, data)["id"]  # here the preset exists, with the same values
    after = client.get(f"/api/adventures/{copy}/samplers").json()
    assert after["preset"] == "Careful" and after["values"] == before["values"]
    assert after["effective"] == before["effective"]


def test_samplers_travel_to_an_installation_without_the_preset(
    tk: Talekeeper, tmp_path: Path, adventure_id: int, client: TestClient
) -> None:
    client.put("/api/sampler-presets/Careful", json={"min_p": 0.1, "top_k": 30})
    client.put(
        f"/api/adventures/{adventure_id}/samplers",
        json={"preset": "Careful", "values": {"top_k": 12}},
    )
    before = client.get(f"/api/adventures/{adventure_id}/samplers").json()["effective"]
    data = export_bytes(tk, adventure_id)
    with pg.own_database("bundle_twins_other") as url:
        other = Talekeeper(tmp_path / "other", database_url=url)
        try:
            copy = import_bytes(other, data).adventure_id
            with TestClient(create_app(other), base_url="http://127.0.0.1:8000") as there:
                after = there.get(f"/api/adventures/{copy}/samplers").json()
        finally:
            other.db.dispose()
    # No "Careful" there: its values came along as the adventure's own (its own still win).
    assert after["preset"] is None
    assert after["values"] == {"min_p": 0.1, "top_k": 12}
    assert after["effective"] == before
