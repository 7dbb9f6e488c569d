"""Export and import over HTTP: a played adventure (real turns, Insights, memories) comes
back whole — its story, state, Insights and Undo all work in the copy."""

from __future__ import annotations

import gzip
import json

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from tests.interop_helpers import assert_same_story, comparable


def _play(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int, text: str, reply: str
) -> None:
    scripted.queue(reply)
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": text}
    )
    assert response.status_code == 200, response.text


def test_export_import_over_the_api(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    block = (
        '```state\n{"events": [{"type": "set_flag", "flag": "ferry_hired", "value": true}]}\n```'
    )
    _play(
        client,
        scripted,
        adventure_id,
        "hire the ferry",
        f"Maren nods and unties the ferry.\n{block}",
    )
    _play(client, scripted, adventure_id, "cross", "The ferry slides over black water.")
    client.post(f"/api/adventures/{adventure_id}/save-points", json={"name": "Crossing"})
    exported = client.get(f"/api/adventures/{adventure_id}/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/gzip"
    assert "attachment" in exported.headers["content-disposition"]
    imported = client.post("/api/adventures/import", content=exported.content)
    assert imported.status_code == 201, imported.text
    copy = imported.json()["id"]
    original, again = (
        client.get(f"/api/adventures/{adventure_id}").json(),
        client.get(f"/api/adventures/{copy}").json(),
    )
    assert [t["narration"] for t in again["turns_shown"]] == [
        t["narration"] for t in original["turns_shown"]
    ]
    assert [t["changes"] for t in again["turns_shown"]] == [
        t["changes"] for t in original["turns_shown"]
    ]
    state, copied = (
        client.get(f"/api/adventures/{adventure_id}/state").json(),
        client.get(f"/api/adventures/{copy}/state").json(),
    )
    assert copied["document"] == state["document"] and copied["view"] == state["view"]
    assert copied["document"]["flags"]["ferry_hired"] is True
    last = again["turns_shown"][-1]["id"]
    insights = client.get(f"/api/adventures/{copy}/turns/{last}/insights").json()
    assert insights["verified"] is True  # the exact prompt is rebuilt from the imported turns
    assert [
        s["name"] for s in client.get(f"/api/adventures/{copy}/save-points").json()["save_points"]
    ] == ["Crossing"]
    assert client.post(f"/api/adventures/{copy}/undo").status_code == 200
    # Re-export of the copy equals the original export, up to ids.
    assert (
        comparable(client.get(f"/api/adventures/{copy}/export").content)[1:]
        == comparable(exported.content)[1:]
    )


def test_refused_import_says_where(client: TestClient, adventure_id: int) -> None:
    exported = client.get(f"/api/adventures/{adventure_id}/export").content
    lines = gzip.decompress(exported).splitlines(keepends=True)
    header = json.loads(lines[0])
    header["adventure"]["head"] = 0
    bad = gzip.compress(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    before = len(client.get("/api/adventures").json())
    refused = client.post("/api/adventures/import", content=bad)
    assert refused.status_code == 422
    assert refused.json()["errors"] == [
        "line 1.adventure.head: Input should be greater than or equal to 1"
    ]
    assert "Nothing was imported" in refused.json()["detail"]
    assert len(client.get("/api/adventures").json()) == before
    assert client.get("/api/adventures/999/export").status_code == 404
    assert (
        client.get("/api/schemas/bundle").json()["title"].startswith("talekeeper adventure bundle")
    )


def test_pages_export_and_import(client: TestClient, adventure_id: int) -> None:
    home = client.get("/").text
    assert (
        f'href="/adventures/{adventure_id}/export"' in home
        and 'action="/adventures/import"' in home
    )
    assert 'id="export-adventure"' in client.get(f"/adventures/{adventure_id}").text
    data = client.get(f"/adventures/{adventure_id}/export").content
    done = client.post(
        "/adventures/import",
        files={"file": ("story.gz", data, "application/gzip")},
        follow_redirects=False,
    )
    assert done.status_code == 303 and done.headers["location"].startswith("/adventures/")
    refused = client.post(
        "/adventures/import", files={"file": ("story.gz", data[:-30], "application/gzip")}
    )
    assert (
        refused.status_code == 422
        and "Nothing was imported" in refused.text
        and 'id="bundle-error"' in refused.text
    )


def test_every_builtin_scenario_round_trips_as_an_adventure_and_as_a_card(
    client: TestClient,
) -> None:
    from talekeeper.interop.detect import convert

    for scenario in client.get("/api/scenarios").json():
        answers = {p["key"]: p.get("default") or "Ada" for p in scenario["placeholders"]}
        started = client.post(
            "/api/adventures", json={"scenario_id": scenario["id"], "answers": answers}
        )
        assert started.status_code == 201, started.text
        exported = client.get(f"/api/adventures/{started.json()['id']}/export").content
        imported = client.post("/api/adventures/import", content=exported)
        assert imported.status_code == 201, (scenario["id"], imported.text)
        again = client.get(f"/api/adventures/{imported.json()['id']}/export").content
        assert_same_story(again, exported)
        card = client.get(f"/api/scenarios/{scenario['id']}/card.png").content
        result = convert(card, "card.png")[0]
        assert (
            result.exact
            and result.document == client.get(f"/api/scenarios/{scenario['id']}").json()["data"]
        )
