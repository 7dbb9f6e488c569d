"""The play page's tree controls (HTMX fragments): takes stepper, edits, lines, Save Points."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from tests.test_tree_api import play, story

HX = {"HX-Request": "true"}


def test_the_story_shows_retry_takes_and_edit(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    page = client.get(f"/adventures/{adventure_id}").text
    assert re.search(r'<button id="retry"[^>]*disabled', page)  # nothing to retry at the opening
    first = play(client, adventure_id, scripted, "Take one.")["turn"]["id"]
    scripted.queue("Take two.")
    second = client.post(f"/api/adventures/{adventure_id}/retry").json()["turn"]["id"]
    page = client.get(f"/adventures/{adventure_id}").text
    assert not re.search(r'<button id="retry"[^>]*disabled', page)
    assert "take 2/2" in page
    assert f'hx-post="/adventures/{adventure_id}/tree/turns/{first}/choose"' in page
    assert f'hx-get="/adventures/{adventure_id}/tree/turns/{second}/edit"' in page
    for word in ("node", "fork", "head"):  # player words only
        assert not re.search(rf"\b{word}\b", re.sub(r"<[^>]+>", " ", page), re.I), word


def test_stepping_to_another_take_from_the_page(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    first = play(client, adventure_id, scripted, "Take one.")["turn"]["id"]
    scripted.queue("Take two.")
    client.post(f"/api/adventures/{adventure_id}/retry")
    fragment = client.post(f"/adventures/{adventure_id}/tree/turns/{first}/choose", headers=HX)
    assert fragment.status_code == 200
    assert (
        "Take one." in fragment.text
        and "Take two." not in fragment.text
        and "take 1/2" in fragment.text
    )
    assert story(client, adventure_id)["head_id"] == first


def test_editing_narration_from_the_page(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    turn = play(client, adventure_id, scripted, "The lamp is dark.", "light the lamp")["turn"]["id"]
    form = client.get(f"/adventures/{adventure_id}/tree/turns/{turn}/edit").text
    assert "The lamp is dark." in form and 'name="narration"' in form
    assert 'class="edit-action"' in form and "light the lamp" in form
    edited = client.post(
        f"/adventures/{adventure_id}/tree/turns/{turn}/edit", data={"narration": "The lamp glows."}
    )
    assert "The lamp glows." in edited.text and "take 2/2" in edited.text
    empty = client.post(
        f"/adventures/{adventure_id}/tree/turns/{turn}/edit", data={"narration": " "}
    )
    assert 'role="alert"' in empty.text and "empty" in empty.text


def test_lines_panel_switch_rename_and_refused_delete(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, "One.", "one")
    two = play(client, adventure_id, scripted, "Two.", "two")["turn"]["id"]
    client.post(f"/api/adventures/{adventure_id}/undo")
    other = play(client, adventure_id, scripted, "Other.", "other")["turn"]["id"]
    panel = client.get(f"/adventures/{adventure_id}/tree/lines").text
    assert panel.count("data-line=") == 2 and "you are reading this line" in panel
    assert "left its parent line after turn 1" in panel and "the first line" in panel

    switched = client.post(f"/adventures/{adventure_id}/tree/lines/{two}/switch", headers=HX)
    assert switched.headers["HX-Trigger"] == "story-changed"
    assert story(client, adventure_id)["head_id"] == two
    renamed = client.post(
        f"/adventures/{adventure_id}/tree/lines/{two}/rename", data={"name": "The main way"}
    )
    assert "The main way" in renamed.text
    refused = client.post(f"/adventures/{adventure_id}/tree/lines/{two}/delete")
    assert 'role="alert"' in refused.text and "Switch to another line" in refused.text
    assert "HX-Trigger" not in refused.headers
    deleted = client.post(f"/adventures/{adventure_id}/tree/lines/{other}/delete")
    assert deleted.text.count("data-line=") == 1 and 'role="alert"' not in deleted.text


def test_save_points_panel(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    one = play(client, adventure_id, scripted, "One.")["turn"]["id"]
    panel = client.get(f"/adventures/{adventure_id}/tree/save-points").text
    assert "No Save Points yet." in panel and "Saves the moment you are reading now" in panel
    made = client.post(
        f"/adventures/{adventure_id}/tree/save-points",
        data={"name": "By the ferry", "note": "calm"},
    )
    assert "By the ferry" in made.text and "you are here" in made.text and "calm" in made.text
    sid = int(re.search(r'data-save-point="(\d+)"', made.text).group(1))
    blank = client.post(f"/adventures/{adventure_id}/tree/save-points", data={"name": "  "})
    assert "A Save Point needs a name." in blank.text
    play(client, adventure_id, scripted, "Two.")
    restored = client.post(f"/adventures/{adventure_id}/tree/save-points/{sid}/restore")
    assert restored.headers["HX-Trigger"] == "story-changed"
    assert story(client, adventure_id)["head_id"] == one
    renamed = client.post(
        f"/adventures/{adventure_id}/tree/save-points/{sid}/rename", data={"name": "Ferry"}
    )
    assert "Ferry" in renamed.text and "By the ferry" not in renamed.text
    gone = client.post(f"/adventures/{adventure_id}/tree/save-points/{sid}/delete")
    assert "No Save Points yet." in gone.text
    assert story(client, adventure_id)["head_id"] == one  # deleting it moved nothing


def test_an_edited_take_shows_its_own_chips(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    """The chips under a turn are the take's being read, never the take it was edited from."""
    block = '\n```state\n{"events": [{"type": "change_stat", "stat": "world.storm", "by": 2}]}\n```'
    turn = play(client, adventure_id, scripted, "The storm rises." + block, "watch")["turn"]["id"]
    before = client.get(f"/adventures/{adventure_id}").text
    assert "Storm 4 → 6" in before
    edited_block = (
        '\n```state\n{"events": [{"type": "change_stat", "stat": "world.storm", "by": -1}]}\n```'
    )
    page = client.post(
        f"/adventures/{adventure_id}/tree/turns/{turn}/edit",
        data={"narration": "The storm eases." + edited_block},
    ).text
    assert "The storm eases." in page and "Storm 4 → 3" in page and "Storm 4 → 6" not in page
    client.post(f"/api/adventures/{adventure_id}/turns/{turn}/choose")  # back to the first take
    page = client.get(f"/adventures/{adventure_id}").text
    assert "Storm 4 → 6" in page and "Storm 4 → 3" not in page
