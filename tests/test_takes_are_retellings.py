"""Takes are retellings, lines are new actions: a different action written after going back
begins a line of its own (the story map shows it) and is never "take 2/2" of the turn it
replaced; a retry, an edited narration and an edited action are takes of their turn; turns
written before a take recorded what it retells are grouped by their action, as before."""

from __future__ import annotations

from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Node
from talekeeper.story.takes import Sibling, families
from tests.test_tree_api import play, story
from tests.test_tree_lines import lines


def last_takes(client: TestClient, aid: int) -> dict:
    return story(client, aid)["turns_shown"][-1]["takes"]


def test_a_new_action_after_going_back_is_a_line_not_a_take(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    aid = adventure_id
    first = play(client, aid, scripted, "The door is locked.", "open the door")["turn"]["id"]
    client.post(f"/api/adventures/{aid}/undo")
    second = play(client, aid, scripted, "The window gives.", "try the window")["turn"]["id"]
    assert last_takes(client, aid)["count"] == 1  # not "take 2/2" of the door
    assert [line["id"] for line in lines(client, aid)] == [first, second]
    page = client.get(f"/adventures/{aid}").text
    assert "take 2/2" not in page and "take 1/2" not in page
    # a retry and both kinds of edit are takes of the window turn, not lines
    scripted.queue("The window sticks.")
    client.post(f"/api/adventures/{aid}/retry")
    client.post(f"/api/adventures/{aid}/turns/{second}/edit", json={"narration": "It opens."})
    scripted.queue("The window is painted shut.")
    client.post(
        f"/api/adventures/{aid}/turns/{second}/edit",
        json={"kind": "do", "text": "force the window"},
    )
    assert last_takes(client, aid) == {**last_takes(client, aid), "index": 4, "count": 4}
    takes = client.get(f"/api/adventures/{aid}/turns/{second}/takes").json()["takes"]
    assert [t["action"] for t in takes] == ["try the window"] * 3 + ["force the window"]
    assert len(lines(client, aid)) == 2  # the door, and the window (with its four takes)
    # stepping through takes stays within the window's: the door is not one of them
    client.post(f"/api/adventures/{aid}/turns/{second}/choose")
    assert last_takes(client, aid)["previous_id"] is None
    assert (
        client.post(f"/api/adventures/{aid}/turns/{second}/step", json={"by": -1}).status_code
        == 409
    )


def test_turns_written_before_takes_were_recorded_group_by_action(
    tk: Talekeeper, client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    aid = adventure_id
    one = play(client, aid, scripted, "Locked.", "open the door")["turn"]["id"]
    scripted.queue("Still locked.")
    client.post(f"/api/adventures/{aid}/retry")
    client.post(f"/api/adventures/{aid}/undo")
    play(client, aid, scripted, "The window.", "try the window")
    with tk.db.session() as session:  # as an older release wrote them: no take_of
        for node in session.query(Node).filter(Node.adventure_id == aid):
            node.take_of = None
    client.post(f"/api/adventures/{aid}/turns/{one}/choose")
    assert last_takes(client, aid)["count"] == 2  # the door and its retry, not the window
    assert len(lines(client, aid)) == 2


def test_deleting_a_take_another_retold_leaves_that_one_retelling_the_first(
    tk: Talekeeper, client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    aid = adventure_id
    first = play(client, aid, scripted, "Locked.", "open the door")["turn"]["id"]
    scripted.queue("Still locked.")
    client.post(f"/api/adventures/{aid}/retry")
    second = story(client, aid)["head_id"]
    scripted.queue("Locked fast.")
    client.post(f"/api/adventures/{aid}/retry")
    third = story(client, aid)["head_id"]
    with tk.db.session() as session:
        assert session.get(Node, third).take_of == second
    assert client.delete(f"/api/adventures/{aid}/turns/{second}").status_code == 200
    with tk.db.session() as session:
        assert session.get(Node, third).take_of == first
    assert last_takes(client, aid)["count"] == 2


SIBLINGS = st.lists(
    st.tuples(
        st.sampled_from(["do", "say", "correction"]), st.sampled_from(["a", "b"]), st.integers(0, 8)
    ),
    max_size=8,
)


@given(SIBLINGS)
def test_families_partition_the_children_and_follow_what_each_retells(rows) -> None:
    siblings = [
        Sibling(i + 1, kind, text, (of % (i + 1)) or None if i else None)
        for i, (kind, text, of) in enumerate(rows)
    ]
    root = families(siblings)
    assert set(root) == {s.id for s in siblings}
    for s in siblings:
        assert root[root[s.id]] == root[s.id] and root[s.id] <= s.id  # the family's first
        if s.action_kind == "correction":
            assert root[s.id] == s.id
        elif s.take_of is not None and s.take_of in root:
            assert root[s.id] == root[s.take_of]
        else:  # a new action: its own family unless an earlier sibling had the same action
            earlier = [
                t
                for t in siblings
                if t.id < s.id and (t.action_kind, t.action_text) == (s.action_kind, s.action_text)
            ]
            assert root[s.id] == (root[earlier[0].id] if earlier else s.id)
