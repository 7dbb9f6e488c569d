"""Retry, takes, forks and edits through the JSON API, with a scripted model."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import tree_ops
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Node
from tests.test_api_turns import sse_events


def play(
    client: TestClient,
    aid: int,
    scripted: ScriptedProvider,
    reply: str,
    text: str = "look",
    kind: str = "do",
) -> dict:
    scripted.queue(reply)
    response = client.post(f"/api/adventures/{aid}/turns", json={"kind": kind, "text": text})
    assert response.status_code == 200, response.text
    return response.json()


def story(client: TestClient, aid: int) -> dict:
    return client.get(f"/api/adventures/{aid}").json()


def narrations(view: dict) -> list[str]:
    return [t["narration"] for t in view["turns_shown"]][1:]  # without the opening


def node_ids(tk: Talekeeper, aid: int) -> set[int]:
    with tk.db.session() as session:
        return set(session.scalars(select(Node.id).where(Node.adventure_id == aid)))


def set_state(tk: Talekeeper, node_id: int, state: dict) -> None:
    """Stand in for the state engine: give a node a snapshot of its own."""
    with tk.db.session() as session:
        session.get(Node, node_id).state = state


def state_of(tk: Talekeeper, node_id: int) -> dict:
    with tk.db.session() as session:
        return session.get(Node, node_id).state


def test_retry_writes_a_new_take_and_keeps_the_old(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    first = play(client, adventure_id, scripted, "The door is locked.", "open the door")["turn"]
    scripted.queue("The door swings open.")
    retried = client.post(f"/api/adventures/{adventure_id}/retry")
    assert retried.status_code == 200, retried.text
    body = retried.json()
    assert body["turn"]["action_line"] == "> You open the door."
    assert body["turn"]["parent_id"] == first["parent_id"] and body["turn"]["id"] != first["id"]
    # The model was asked the same action again.
    assert "> You open the door." in scripted.requests[-1].messages[-1].content
    view = story(client, adventure_id)
    assert narrations(view) == ["The door swings open."]
    assert view["turns_shown"][-1]["takes"] == {
        "index": 2,
        "count": 2,
        "previous_id": first["id"],
        "next_id": None,
    }
    assert view["can_undo"] and not view["can_redo"]

    takes = client.get(f"/api/adventures/{adventure_id}/takes").json()
    assert [t["narration"] for t in takes["takes"]] == [
        "The door is locked.",
        "The door swings open.",
    ]
    assert [t["on_line"] for t in takes["takes"]] == [False, True]


def test_retry_streams_over_sse(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, "Nothing happens.", "wait")
    scripted.queue("A gull lands beside you.")
    response = client.post(
        f"/api/adventures/{adventure_id}/retry", headers={"Accept": "text/event-stream"}
    )
    events = sse_events(response.text)
    assert [name for name, _ in events][0] == "accepted" and events[-1][0] == "done"
    assert "".join(d["text"] for n, d in events if n == "text") == "A gull lands beside you."


def test_choose_and_step_between_takes(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    a = play(client, adventure_id, scripted, "Take A.")["turn"]["id"]
    scripted.queue("Take B.", "Take C.")
    b = client.post(f"/api/adventures/{adventure_id}/retry").json()["turn"]["id"]
    c = client.post(f"/api/adventures/{adventure_id}/retry").json()["turn"]["id"]
    set_state(tk, a, {"take": "A"})
    set_state(tk, b, {"take": "B"})
    set_state(tk, c, {"take": "C"})

    chosen = client.post(f"/api/adventures/{adventure_id}/turns/{a}/choose").json()
    assert narrations(chosen) == ["Take A."] and chosen["head_id"] == a
    assert tree_ops.current_state(tk, adventure_id) == {"take": "A"}
    assert chosen["turns_shown"][-1]["takes"] == {
        "index": 1,
        "count": 3,
        "previous_id": None,
        "next_id": b,
    }

    stepped = client.post(f"/api/adventures/{adventure_id}/turns/{a}/step", json={"by": 1}).json()
    assert stepped["head_id"] == b and tree_ops.current_state(tk, adventure_id) == {"take": "B"}
    stepped = client.post(f"/api/adventures/{adventure_id}/turns/{b}/step", json={"by": 1}).json()
    assert stepped["head_id"] == c
    beyond = client.post(f"/api/adventures/{adventure_id}/turns/{c}/step", json={"by": 1})
    assert beyond.status_code == 409 and "last of 3" in beyond.json()["detail"]
    assert story(client, adventure_id)["head_id"] == c  # refused: nothing moved

    # Choosing a take makes it what Redo follows from its parent.
    client.post(f"/api/adventures/{adventure_id}/turns/{b}/choose")
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert client.post(f"/api/adventures/{adventure_id}/redo").json()["head_id"] == b


def test_retry_of_a_turn_with_a_future_keeps_that_future(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    one = play(client, adventure_id, scripted, "One.", "step one")["turn"]["id"]
    two = play(client, adventure_id, scripted, "Two.", "step two")["turn"]["id"]
    client.post(f"/api/adventures/{adventure_id}/undo")
    scripted.queue("One, again.")
    retried = client.post(f"/api/adventures/{adventure_id}/retry").json()
    assert narrations(story(client, adventure_id)) == ["One, again."]
    assert retried["can_redo"] is False
    # The old take still has its whole future: choose it and Redo walks into "Two."
    client.post(f"/api/adventures/{adventure_id}/turns/{one}/choose")
    assert client.post(f"/api/adventures/{adventure_id}/redo").json()["head_id"] == two


def test_retry_an_earlier_turn_by_id(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    one = play(client, adventure_id, scripted, "One.", "first")["turn"]["id"]
    play(client, adventure_id, scripted, "Two.", "second")
    scripted.queue("One, told differently.")
    body = client.post(f"/api/adventures/{adventure_id}/retry", json={"node_id": one}).json()
    assert body["turn"]["action_line"] == "> You first."
    assert narrations(story(client, adventure_id)) == ["One, told differently."]


def test_retry_refusals_change_nothing(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    before = node_ids(tk, adventure_id)
    opening = client.post(f"/api/adventures/{adventure_id}/retry")
    assert opening.status_code == 409 and "opening" in opening.json()["detail"]
    assert (
        client.post(f"/api/adventures/{adventure_id}/retry", json={"node_id": 99999}).status_code
        == 404
    )
    play(client, adventure_id, scripted, "Rain.")
    scripted.fail_next(after_chunks=1)
    scripted.queue("This retry is cut off.")
    assert client.post(f"/api/adventures/{adventure_id}/retry").status_code == 502
    assert len(node_ids(tk, adventure_id)) == len(before) + 1  # only the played turn
    assert narrations(story(client, adventure_id)) == ["Rain."]


def test_writing_below_a_moved_back_head_forks(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, "One.", "one")
    two = play(client, adventure_id, scripted, "Two.", "two")["turn"]["id"]
    three = play(client, adventure_id, scripted, "Three.", "three")["turn"]["id"]
    client.post(f"/api/adventures/{adventure_id}/undo")
    client.post(f"/api/adventures/{adventure_id}/undo")
    forked = play(client, adventure_id, scripted, "Another two.", "something else")
    assert forked["can_redo"] is False
    assert narrations(story(client, adventure_id)) == ["One.", "Another two."]
    assert {two, three} <= node_ids(tk, adventure_id)  # the old continuation is whole
    # Redo now follows the new line; the old one is a line of its own.
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert (
        client.post(f"/api/adventures/{adventure_id}/redo").json()["head_id"]
        == forked["turn"]["id"]
    )
    lines = client.get(f"/api/adventures/{adventure_id}/lines").json()["lines"]
    assert [line["id"] for line in lines] == [three, forked["turn"]["id"]]


def test_edit_narration_is_a_new_take_with_the_parents_state(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    one = play(client, adventure_id, scripted, "You find a key.", "search")["turn"]
    two = play(client, adventure_id, scripted, "You open the chest.", "open chest")["turn"]["id"]
    parent_state = state_of(tk, one["parent_id"])
    set_state(
        tk, one["id"], {**parent_state, "flags": {"ferry_hired": True, "tower_unlocked": False}}
    )
    edited = client.post(
        f"/api/adventures/{adventure_id}/turns/{one['id']}/edit",
        json={"narration": "  You find nothing.  "},
    )
    assert edited.status_code == 200, edited.text
    view = edited.json()
    assert narrations(view) == ["You find nothing."]
    new = view["turns_shown"][-1]
    assert (
        new["id"] != one["id"]
        and new["action_line"] == "> You search."
        and new["takes"]["count"] == 2
    )
    assert new["model"] == tree_ops.EDITED_BY_PLAYER
    assert view["can_undo"] and not view["can_redo"]
    # Its state comes from the parent, not from the take it replaces — plus the recent-event
    # line code writes for the edited beat (seed 003), from the edited text.
    current = tree_ops.current_state(tk, adventure_id)
    assert {**current, "recent_events": None} == {**parent_state, "recent_events": None}
    assert current["recent_events"] == [
        *parent_state["recent_events"],
        {"turn": 1, "text": "You find nothing."},
    ]
    # The original and its whole future are kept.
    client.post(f"/api/adventures/{adventure_id}/turns/{one['id']}/choose")
    assert client.post(f"/api/adventures/{adventure_id}/redo").json()["head_id"] == two


def test_edit_narration_rederives_the_state_from_the_parent(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    hired = (
        '```state\n{"events": [{"type": "set_flag", "flag": "ferry_hired", "value": true}]}\n```'
    )
    one = play(
        client, adventure_id, scripted, "Maren agrees to take you.\n\n" + hired, "ask Maren"
    )["turn"]
    assert tree_ops.current_state(tk, adventure_id)["flags"]["ferry_hired"] is True
    # The edited text is read again: what it tells is its change (the move), and what no
    # words can tell (the switch) is kept from the original take…
    client.post(
        f"/api/adventures/{adventure_id}/turns/{one['id']}/edit",
        json={"narration": "Maren nods and rows you across to the lighthouse."},
    )
    state = tree_ops.current_state(tk, adventure_id)
    assert state["flags"]["ferry_hired"] is True
    assert state["entities"]["player"]["location"] == "lighthouse"
    # …and a state block written into the edit is what the edited text implies instead.
    refused = (
        '```state\n{"events": [{"type": "set_flag", "flag": "ferry_hired", "value": false}]}\n```'
    )
    edited = client.post(
        f"/api/adventures/{adventure_id}/turns/{one['id']}/edit",
        json={"narration": "Maren refuses.\n\n" + refused},
    ).json()
    assert edited["turns_shown"][-1]["narration"] == "Maren refuses."
    assert tree_ops.current_state(tk, adventure_id)["flags"]["ferry_hired"] is False


def test_edit_action_is_a_new_take_with_new_narration(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    one = play(client, adventure_id, scripted, "You shout into the fog.", "shout")["turn"]
    scripted.queue('The ferrywoman answers: "Quiet, you."')
    edited = client.post(
        f"/api/adventures/{adventure_id}/turns/{one['id']}/edit",
        json={"kind": "say", "text": "Hello?"},
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["turn"]["action_line"] == '> You say "Hello?"'
    assert '> You say "Hello?"' in scripted.requests[-1].messages[-1].content
    view = story(client, adventure_id)
    assert narrations(view) == ['The ferrywoman answers: "Quiet, you."']
    takes = client.get(f"/api/adventures/{adventure_id}/takes").json()["takes"]
    assert [t["action"] for t in takes] == ["shout", "Hello?"]
    assert one["id"] in node_ids(tk, adventure_id)


def test_edit_refusals(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    opening = story(client, adventure_id)["turns_shown"][0]["id"]
    one = play(client, adventure_id, scripted, "Fog.")["turn"]["id"]
    before = node_ids(tk, adventure_id)
    url = f"/api/adventures/{adventure_id}/turns"
    refused = client.post(f"{url}/{opening}/edit", json={"narration": "A new opening."})
    assert refused.status_code == 409 and "opening" in refused.json()["detail"]
    assert client.post(f"{url}/{one}/edit", json={"narration": "   "}).status_code == 422
    assert client.post(f"{url}/{one}/edit", json={}).status_code == 422
    assert (
        client.post(
            f"{url}/{one}/edit", json={"narration": "x", "kind": "do", "text": "y"}
        ).status_code
        == 422
    )
    assert client.post(f"{url}/{one}/edit", json={"kind": "do", "text": " "}).status_code == 422
    assert client.post(f"{url}/99999/edit", json={"narration": "x"}).status_code == 404
    assert node_ids(tk, adventure_id) == before


def test_every_writer_is_refused_while_the_adventure_is_busy(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    one = play(client, adventure_id, scripted, "One.")["turn"]["id"]
    two = play(client, adventure_id, scripted, "Two.")["turn"]["id"]
    client.post(f"/api/adventures/{adventure_id}/undo")
    client.post(f"/api/adventures/{adventure_id}/redo")
    sp = client.post(f"/api/adventures/{adventure_id}/save-points", json={"name": "Here"}).json()[
        "id"
    ]
    base = f"/api/adventures/{adventure_id}"
    before = (
        node_ids(tk, adventure_id),
        story(client, adventure_id),
        client.get(f"{base}/save-points").json(),
    )
    writers = [
        ("post", f"{base}/retry", None),
        ("post", f"{base}/undo", None),
        ("post", f"{base}/redo", None),
        ("post", f"{base}/turns/{one}/choose", None),
        ("post", f"{base}/turns/{two}/step", {"by": -1}),
        ("post", f"{base}/turns/{two}/edit", {"narration": "Edited."}),
        ("post", f"{base}/turns/{two}/edit", {"kind": "do", "text": "jump"}),
        ("patch", f"{base}/lines/{two}", {"name": "Main"}),
        ("post", f"{base}/lines/{two}/switch", None),
        ("delete", f"{base}/lines/{two}", None),
        ("post", f"{base}/save-points", {"name": "Another"}),
        ("patch", f"{base}/save-points/{sp}", {"name": "Renamed"}),
        ("delete", f"{base}/save-points/{sp}", None),
        ("post", f"{base}/save-points/{sp}/restore", None),
    ]
    tk.locks.acquire(adventure_id)
    try:
        for method, url, body in writers:
            response = client.request(method.upper(), url, json=body)
            assert response.status_code == 409, (url, response.text)
            assert "busy" in response.json()["detail"]
    finally:
        tk.locks.release(adventure_id)
    after = (
        node_ids(tk, adventure_id),
        story(client, adventure_id),
        client.get(f"{base}/save-points").json(),
    )
    assert after == before


def test_the_opening_can_be_edited_until_the_first_turn(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    """The opening has no parent to hold takes: before any turn its text is replaced (nothing
    rests on it yet); once a turn follows it, even after Undo back to it, it is refused."""
    view = story(client, adventure_id)
    opening = view["turns_shown"][0]["id"]
    assert view["opening_editable"] is True
    page = client.get(f"/adventures/{adventure_id}").text
    assert 'aria-label="Edit the opening"' in page
    form = client.get(f"/adventures/{adventure_id}/tree/turns/{opening}/edit").text
    assert "Save the opening" in form and "Replay with this action" not in form
    before = node_ids(tk, adventure_id)
    edited = client.post(
        f"/api/adventures/{adventure_id}/turns/{opening}/edit",
        json={"narration": "  A calmer *dawn*. "},
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["turns_shown"][0]["narration"] == "A calmer *dawn*."
    assert node_ids(tk, adventure_id) == before  # replaced, not a new take
    play(client, adventure_id, scripted, "Gulls cry.")
    assert scripted.requests and "A calmer *dawn*." in str(scripted.requests[-1].messages)
    client.post(f"/api/adventures/{adventure_id}/undo")
    view = story(client, adventure_id)
    assert view["head_id"] == opening and view["opening_editable"] is False
    assert 'aria-label="Edit the opening"' not in client.get(f"/adventures/{adventure_id}").text
    refused = client.post(
        f"/api/adventures/{adventure_id}/turns/{opening}/edit", json={"narration": "Again."}
    )
    assert refused.status_code == 409 and "until the first turn" in refused.json()["detail"]
    assert story(client, adventure_id)["turns_shown"][0]["narration"] == "A calmer *dawn*."
