"""Lines (branches) and Save Points through the JSON API."""

from __future__ import annotations

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.web.app import create_app
from tests.test_tree_api import narrations, node_ids, play, set_state, story


def fork_story(client: TestClient, aid: int, scripted: ScriptedProvider) -> dict[str, int]:
    """opening → one → two → three, and a second line: one → other-two (head there)."""
    ids = {"opening": story(client, aid)["turns_shown"][0]["id"]}
    for name in ("one", "two", "three"):
        ids[name] = play(client, aid, scripted, f"{name.title()}.", name)["turn"]["id"]
    client.post(f"/api/adventures/{aid}/undo")
    client.post(f"/api/adventures/{aid}/undo")
    ids["other"] = play(client, aid, scripted, "Other two.", "other")["turn"]["id"]
    return ids


def lines(client: TestClient, aid: int) -> list[dict]:
    return client.get(f"/api/adventures/{aid}/lines").json()["lines"]


def test_lines_list_length_fork_point_and_head(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    ids = fork_story(client, adventure_id, scripted)
    first, second = lines(client, adventure_id)
    assert first["id"] == ids["three"] and first["length"] == 3 and first["fork_depth"] is None
    assert first["has_head"] is False and first["own_turns"] == 2  # two and three
    assert second["id"] == ids["other"] and second["length"] == 2
    assert second["fork_id"] == ids["one"] and second["fork_depth"] == 1
    assert (
        second["has_head"] is True and second["ends_at_head"] is True and second["own_turns"] == 1
    )
    assert second["last_action_line"] == "> You other." and second["last_narration"] == "Other two."
    # Reading an earlier moment they share puts the head on both.
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert [line["has_head"] for line in lines(client, adventure_id)] == [True, True]


def test_rename_a_line_and_the_name_follows_it_as_it_grows(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    ids = fork_story(client, adventure_id, scripted)
    renamed = client.patch(
        f"/api/adventures/{adventure_id}/lines/{ids['other']}", json={"name": "  The quiet way "}
    )
    assert renamed.json() == {"id": ids["other"], "name": "The quiet way"}
    new_end = play(client, adventure_id, scripted, "Further.", "go on")["turn"]["id"]
    named = [line for line in lines(client, adventure_id) if line["name"]]
    assert [(line["id"], line["name"]) for line in named] == [(new_end, "The quiet way")]
    assert story(client, adventure_id)["line_name"] == "The quiet way"
    # A new take beside its end starts a new, unnamed line; the named one keeps its name.
    scripted.queue("Further, again.")
    client.post(f"/api/adventures/{adventure_id}/retry")
    assert [line["name"] for line in lines(client, adventure_id)] == [None, "The quiet way", None]
    client.patch(f"/api/adventures/{adventure_id}/lines/{new_end}", json={"name": ""})
    assert all(line["name"] is None for line in lines(client, adventure_id))
    middle = client.patch(f"/api/adventures/{adventure_id}/lines/{ids['one']}", json={"name": "x"})
    assert middle.status_code == 409 and "not the end of a line" in middle.json()["detail"]
    assert (
        client.patch(
            f"/api/adventures/{adventure_id}/lines/{ids['other']}", json={"name": "x" * 81}
        ).status_code
        == 422
    )


def test_switch_line_moves_the_head_to_its_end(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    ids = fork_story(client, adventure_id, scripted)
    set_state(tk, ids["three"], {"at": "three"})
    switched = client.post(f"/api/adventures/{adventure_id}/lines/{ids['three']}/switch").json()
    assert narrations(switched) == ["One.", "Two.", "Three."]
    assert switched["head_id"] == ids["three"] and switched["can_undo"] and not switched["can_redo"]
    from talekeeper.service import tree_ops

    assert tree_ops.current_state(tk, adventure_id) == {"at": "three"}
    assert (
        client.post(f"/api/adventures/{adventure_id}/lines/{ids['one']}/switch").status_code == 409
    )
    assert client.post(f"/api/adventures/{adventure_id}/lines/99999/switch").status_code == 404


def test_delete_a_line_removes_only_its_own_turns(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    ids = fork_story(client, adventure_id, scripted)
    before = node_ids(tk, adventure_id)
    deleted = client.delete(f"/api/adventures/{adventure_id}/lines/{ids['three']}")
    assert deleted.status_code == 200 and deleted.json() == {"deleted_turns": 2}
    assert node_ids(tk, adventure_id) == before - {ids["two"], ids["three"]}
    assert [line["id"] for line in lines(client, adventure_id)] == [ids["other"]]
    # Redo from the shared turn now follows the line that is left.
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert client.post(f"/api/adventures/{adventure_id}/redo").json()["head_id"] == ids["other"]


def test_delete_refusals_say_why_and_change_nothing(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    ids = fork_story(client, adventure_id, scripted)
    base = f"/api/adventures/{adventure_id}"
    before = node_ids(tk, adventure_id)
    reading = client.delete(f"{base}/lines/{ids['other']}")
    assert reading.status_code == 409 and "Switch to another line" in reading.json()["detail"]
    # A Save Point on the other line's own turns protects it.
    client.post(f"{base}/lines/{ids['three']}/switch")
    client.post(f"{base}/undo")
    client.post(f"{base}/save-points", json={"name": "Before the storm"})
    client.post(f"{base}/lines/{ids['other']}/switch")
    guarded = client.delete(f"{base}/lines/{ids['three']}")
    assert guarded.status_code == 409
    detail = guarded.json()["detail"]
    assert "“Before the storm”" in detail and "Delete that Save Point first" in detail
    assert "deletes none of the story" in detail
    not_end = client.delete(f"{base}/lines/{ids['one']}")
    assert not_end.status_code == 409 and "not the end of a line" in not_end.json()["detail"]
    assert node_ids(tk, adventure_id) == before
    # A Save Point on a turn the line shares does not stop the delete.
    sp = client.get(f"{base}/save-points").json()["save_points"][0]["id"]
    client.delete(f"{base}/save-points/{sp}")
    client.post(f"{base}/lines/{ids['three']}/switch")
    client.post(f"{base}/undo")
    client.post(f"{base}/undo")
    client.post(f"{base}/save-points", json={"name": "Shared"})
    client.post(f"{base}/lines/{ids['other']}/switch")
    assert client.delete(f"{base}/lines/{ids['three']}").status_code == 200


def test_the_only_line_cannot_be_deleted(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    one = play(client, adventure_id, scripted, "One.")["turn"]["id"]
    refused = client.delete(f"/api/adventures/{adventure_id}/lines/{one}")
    assert refused.status_code == 409


def test_save_points_create_list_rename_delete(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    base = f"/api/adventures/{adventure_id}"
    ids = fork_story(client, adventure_id, scripted)  # reading: one → other
    made = client.post(f"{base}/save-points", json={"name": "Other way", "note": "after the fork"})
    assert made.status_code == 201
    assert (
        made.json()["node_id"] == ids["other"]
        and made.json()["at_head"]
        and made.json()["turn"] == 2
    )
    client.post(f"{base}/undo")  # after Undo, the earlier moment is what gets saved
    assert (
        client.post(f"{base}/save-points", json={"name": "At one"}).json()["node_id"] == ids["one"]
    )
    client.post(f"{base}/lines/{ids['three']}/switch")
    client.post(f"{base}/save-points", json={"name": "At three"})
    client.post(f"{base}/undo")
    client.post(f"{base}/undo")  # reading "one"; three is ahead by Redo, other is on a line left

    listing = client.get(f"{base}/save-points").json()
    points = listing["save_points"]
    assert [p["name"] for p in points] == ["At three", "At one", "Other way"]  # newest first
    assert [p["on_line"] for p in points] == [True, True, False]
    assert [p["at_head"] for p in points] == [False, True, False]
    assert points[2]["note"] == "after the fork"
    assert listing["can_undo"] is True and listing["can_redo"] is True

    sid = points[0]["id"]
    renamed = client.patch(
        f"{base}/save-points/{sid}", json={"name": "The third turn", "note": "n"}
    ).json()
    assert (
        renamed["name"] == "The third turn"
        and renamed["note"] == "n"
        and renamed["node_id"] == ids["three"]
    )
    assert client.patch(f"{base}/save-points/{sid}", json={"name": "  "}).status_code == 422
    assert client.post(f"{base}/save-points", json={"name": ""}).status_code == 422
    assert client.post(f"{base}/save-points", json={"name": "x" * 121}).status_code == 422

    nodes_before, story_before = node_ids(tk, adventure_id), story(client, adventure_id)
    assert client.delete(f"{base}/save-points/{sid}").status_code == 204
    assert (
        node_ids(tk, adventure_id) == nodes_before and story(client, adventure_id) == story_before
    )
    assert [p["name"] for p in client.get(f"{base}/save-points").json()["save_points"]] == [
        "At one",
        "Other way",
    ]
    assert client.delete(f"{base}/save-points/{sid}").status_code == 404


def test_restore_moves_the_head_and_deletes_nothing(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    base = f"/api/adventures/{adventure_id}"
    one = play(client, adventure_id, scripted, "One.", "one")["turn"]["id"]
    set_state(tk, one, {"at": "one"})
    sid = client.post(f"{base}/save-points", json={"name": "One"}).json()["id"]
    two = play(client, adventure_id, scripted, "Two.", "two")["turn"]["id"]
    three = play(client, adventure_id, scripted, "Three.", "three")["turn"]["id"]
    before = node_ids(tk, adventure_id)

    restored = client.post(f"{base}/save-points/{sid}/restore").json()
    assert restored["head_id"] == one and narrations(restored) == ["One."]
    assert restored["can_undo"] and restored["can_redo"]
    from talekeeper.service import tree_ops

    assert tree_ops.current_state(tk, adventure_id) == {"at": "one"}
    assert node_ids(tk, adventure_id) == before  # nothing deleted, nothing forked
    assert len(lines(client, adventure_id)) == 1
    # The retained future is reachable by Redo.
    assert client.post(f"{base}/redo").json()["head_id"] == two
    assert client.post(f"{base}/redo").json()["head_id"] == three


def test_save_points_belong_to_their_adventure(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    sid = client.post(f"/api/adventures/{adventure_id}/save-points", json={"name": "Mine"}).json()[
        "id"
    ]
    other = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()["id"]
    assert client.post(f"/api/adventures/{other}/save-points/{sid}/restore").status_code == 404
    assert client.delete(f"/api/adventures/{other}/save-points/{sid}").status_code == 404
    assert client.get(f"/api/adventures/{other}/save-points").json()["save_points"] == []
    own_turn = story(client, adventure_id)["turns_shown"][0]["id"]
    assert client.post(f"/api/adventures/{other}/turns/{own_turn}/choose").status_code == 404


def test_save_points_and_lines_survive_a_restart(isolated_home, scripted: ScriptedProvider) -> None:
    tk = Talekeeper(isolated_home, provider_override=scripted)
    with TestClient(create_app(tk), base_url="http://127.0.0.1") as client:
        aid = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()["id"]
        one = play(client, aid, scripted, "One.")["turn"]["id"]
        client.post(f"/api/adventures/{aid}/save-points", json={"name": "Kept", "note": "forever"})
        client.patch(f"/api/adventures/{aid}/lines/{one}", json={"name": "Main"})
        play(client, aid, scripted, "Two.")
    again = Talekeeper(isolated_home, provider_override=scripted)
    with TestClient(create_app(again), base_url="http://127.0.0.1") as client:
        points = client.get(f"/api/adventures/{aid}/save-points").json()["save_points"]
        assert [(p["name"], p["note"], p["node_id"]) for p in points] == [("Kept", "forever", one)]
        assert [line["name"] for line in lines(client, aid)] == ["Main"]
        assert (
            client.post(f"/api/adventures/{aid}/save-points/{points[0]['id']}/restore").json()[
                "head_id"
            ]
            == one
        )


def test_deleting_an_adventure_takes_its_save_points(client: TestClient, adventure_id: int) -> None:
    client.post(f"/api/adventures/{adventure_id}/save-points", json={"name": "Gone soon"})
    assert client.delete(f"/api/adventures/{adventure_id}").status_code == 204


def test_a_line_read_from_an_earlier_moment_cannot_be_deleted(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    ids = fork_story(client, adventure_id, scripted)
    base = f"/api/adventures/{adventure_id}"
    client.post(f"{base}/lines/{ids['three']}/switch")
    client.post(f"{base}/undo")  # reading "two": a turn only this line has
    before = node_ids(tk, adventure_id)
    refused = client.delete(f"{base}/lines/{ids['three']}")
    assert refused.status_code == 409 and "You are reading this line" in refused.json()["detail"]
    client.post(f"{base}/undo")  # reading "one", which both lines share: still reading it
    assert client.delete(f"{base}/lines/{ids['three']}").status_code == 409
    assert node_ids(tk, adventure_id) == before


def test_retries_and_edits_are_takes_of_a_turn_not_lines(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    """One retry, two edits and one real branch: two lines, the takes in their turn's ‹ 4/4 ›."""
    aid = adventure_id
    play(client, aid, scripted, "One.", "one")
    two = play(client, aid, scripted, "Two.", "two")["turn"]["id"]
    scripted.queue("Two, again.")
    client.post(f"/api/adventures/{aid}/retry")
    client.post(f"/api/adventures/{aid}/turns/{two}/edit", json={"narration": "Two, edited."})
    head = story(client, aid)["turns_shown"][-1]
    client.post(
        f"/api/adventures/{aid}/turns/{head['id']}/edit", json={"narration": "Two, edited again."}
    )
    view = story(client, aid)
    assert view["turns_shown"][-1]["takes"]["count"] == 4
    assert len(lines(client, aid)) == 1
    # A different action written after going back is a line; its takes are not.
    client.post(f"/api/adventures/{aid}/undo")
    play(client, aid, scripted, "Elsewhere.", "go elsewhere")
    play(client, aid, scripted, "Further.", "go on")
    scripted.queue("Further, again.")
    client.post(f"/api/adventures/{aid}/retry")
    found = lines(client, aid)
    assert len(found) == 2
    assert [line["last_narration"] for line in found] == ["Two, edited again.", "Further, again."]
    assert found[1]["parent_line"] == found[0]["id"]
    # A take that goes on ends a line of its own; its bare sibling takes still do not.
    client.post(f"/api/adventures/{aid}/turns/{two}/choose")
    play(client, aid, scripted, "Three.", "three")
    assert [line["last_narration"] for line in lines(client, aid)] == ["Further, again.", "Three."]


def test_an_undone_correction_is_neither_a_take_nor_a_line(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    aid = adventure_id
    play(client, aid, scripted, "One.", "one")
    fix = client.post(
        f"/api/adventures/{aid}/state/corrections",
        json={"events": [{"type": "set_stat", "stat": "player.health", "value": 6}]},
    )
    assert fix.status_code == 200, fix.text
    client.post(f"/api/adventures/{aid}/undo")
    nxt = play(client, aid, scripted, "Two.", "two")["turn"]
    shown = story(client, aid)["turns_shown"][-1]
    assert shown["id"] == nxt["id"] and shown["takes"]["count"] == 1  # not "take 2/2"
    assert client.get(f"/api/adventures/{aid}/turns/{nxt['id']}/takes").json()["count"] == 1
    found = lines(client, aid)
    assert [line["id"] for line in found] == [nxt["id"]]  # switching lines cannot bring it back


def test_the_old_branch_routes_still_answer_and_are_marked_deprecated(
    client, adventure_id: int
) -> None:
    """The first release called a line a "branch"; its routes stay as deprecated aliases."""
    base = f"/api/adventures/{adventure_id}"
    listing = client.get(f"{base}/branches").json()
    assert listing["branches"] == listing["lines"] == client.get(f"{base}/lines").json()["lines"]
    leaf = listing["lines"][0]["id"]
    assert (
        client.patch(f"{base}/branches/{leaf}", json={"name": "Old way"}).json()["name"]
        == "Old way"
    )
    assert client.get(f"{base}/lines").json()["lines"][0]["name"] == "Old way"
    paths = client.get("/openapi.json").json()["paths"]
    old, new = (
        paths["/api/adventures/{adventure_id}/branches/{leaf_id}"],
        paths["/api/adventures/{adventure_id}/lines/{leaf_id}"],
    )
    assert old["patch"]["deprecated"] and old["delete"]["deprecated"]
    assert not new["patch"].get("deprecated") and not new["delete"].get("deprecated")
