"""Undo, redo, choose and step through the JSON API answered with a delta: a client that says
which turns it shows (`shown_first` … `shown_head`, as the play page does) is told what
changed for them, and patching its list with the answer gives the story as it now reads."""

from __future__ import annotations

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talekeeper.llm.scripted import ScriptedProvider
from tests.test_tree_api import play, story


def shown_of(ids: list[int]) -> dict[str, int]:
    return {"shown_first": ids[0], "shown_head": ids[-1]}


def patched(ids: list[int], delta: dict) -> list[int]:
    """The client's list of turns after it applies `delta`, as a client would."""
    added = [t["id"] for t in delta["added"]]
    if delta["keep"] is None:
        return added
    kept = ids[: ids.index(delta["keep"]) + 1]
    assert ids[len(kept) :] == delta["removed"]
    return kept + added


def shown_now(client: TestClient, aid: int) -> list[int]:
    return [t["id"] for t in story(client, aid)["turns_shown"]]


def test_undo_and_redo_answer_what_changed(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, "First.")
    play(client, adventure_id, scripted, "Second.")
    ids = shown_now(client, adventure_id)
    url = f"/api/adventures/{adventure_id}"

    undone = client.post(f"{url}/undo", params=shown_of(ids)).json()
    assert "turns_shown" not in undone  # not the story: what changed
    assert undone["keep"] == ids[-2] and undone["removed"] == [ids[-1]] and undone["added"] == []
    assert undone["head_id"] == ids[-2] and undone["can_redo"] and undone["turns"] == 1
    ids = patched(ids, undone)

    redone = client.post(f"{url}/redo", params=shown_of(ids)).json()
    assert redone["keep"] == ids[-1] and redone["removed"] == []
    assert [t["narration"] for t in redone["added"]] == ["Second."]
    assert redone["head_id"] == redone["added"][0]["id"] and not redone["can_redo"]
    assert patched(ids, redone) == shown_now(client, adventure_id)

    # Without the shown turns: the whole story, as before.
    whole = client.post(f"{url}/undo").json()
    assert [t["narration"] for t in whole["turns_shown"]][-1] == "First."


def test_a_take_step_answers_the_take_and_its_place(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    a = play(client, adventure_id, scripted, "Take A.")["turn"]["id"]
    scripted.queue("Take B.")
    b = client.post(f"/api/adventures/{adventure_id}/retry").json()["turn"]["id"]
    ids = shown_now(client, adventure_id)
    assert ids[-1] == b
    url = f"/api/adventures/{adventure_id}/turns"

    chosen = client.post(f"{url}/{a}/choose", params=shown_of(ids)).json()
    assert chosen["keep"] == ids[-2] and chosen["removed"] == [b]
    assert [t["narration"] for t in chosen["added"]] == ["Take A."]
    assert chosen["added"][0]["takes"] == {
        "index": 1,
        "count": 2,
        "previous_id": None,
        "next_id": b,
    }
    ids = patched(ids, chosen)

    stepped = client.post(f"{url}/{a}/step", params=shown_of(ids), json={"by": 1}).json()
    assert stepped["removed"] == [a] and [t["id"] for t in stepped["added"]] == [b]
    assert patched(ids, stepped) == shown_now(client, adventure_id)


def test_turns_the_client_cannot_patch_get_the_last_turns(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, "First.")
    ids = shown_now(client, adventure_id)
    gone = {"shown_first": 999_999, "shown_head": 999_998}  # no such turns here
    answer = client.post(f"/api/adventures/{adventure_id}/undo", params=gone).json()
    assert answer["keep"] is None and answer["removed"] == [] and not answer["has_more"]
    assert [t["id"] for t in answer["added"]] == ids[:-1] == shown_now(client, adventure_id)


def test_half_a_shown_range_is_refused_and_changes_nothing(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, "First.")
    head = story(client, adventure_id)["head_id"]
    answer = client.post(f"/api/adventures/{adventure_id}/undo", params={"shown_head": head})
    assert answer.status_code == 422 and "shown_first" in answer.json()["detail"]
    assert story(client, adventure_id)["head_id"] == head


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(moves=st.lists(st.sampled_from(["undo", "redo", "step+", "step-"]), max_size=12))
def test_patching_with_every_answer_keeps_the_client_on_the_story(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider, moves: list[str]
) -> None:
    """Whatever the client does, its list patched with each answer is the story's end."""
    if story(client, adventure_id)["turns"] == 0:  # (the adventure is kept between examples)
        for text in ("One.", "Two.", "Three."):
            play(client, adventure_id, scripted, text)
        scripted.queue("Three again.")
        client.post(f"/api/adventures/{adventure_id}/retry")
    ids = shown_now(client, adventure_id)
    url = f"/api/adventures/{adventure_id}"
    for move in moves:
        head = ids[-1]
        if move.startswith("step"):
            answer = client.post(
                f"{url}/turns/{head}/step",
                params=shown_of(ids),
                json={"by": 1 if move == "step+" else -1},
            )
        else:
            answer = client.post(f"{url}/{move}", params=shown_of(ids))
        if answer.status_code == 409:  # nowhere to go: nothing changed
            continue
        assert answer.status_code == 200, answer.text
        ids = patched(ids, answer.json())
        assert ids == shown_now(client, adventure_id)
