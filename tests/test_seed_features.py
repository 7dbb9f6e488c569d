"""Features the predecessor had: a memory written by hand (API, page, terminal), the memory
bank switched per adventure, and one turn deleted in tree terms (a take, or a line's last
turn: never one the story goes on after, never the opening, never one a Save Point keeps)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory import worker
from talekeeper.service import memories, tree_ops
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Memory, Node
from tests.test_terminal_ux import run_play
from tests.test_tree_api import play, story


def memory_texts(client: TestClient, aid: int) -> list[str]:
    return [m["text"] for m in client.get(f"/api/adventures/{aid}/memories").json()["memories"]]


def test_a_memory_written_by_hand_belongs_to_its_moment(
    tk: Talekeeper, client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    aid = adventure_id
    play(client, aid, scripted, "The gate creaks.", "open the gate")
    made = client.post(
        f"/api/adventures/{aid}/memories",
        json={"text": "  Gwen  owes Aldric   her life. ", "pinned": True},
    )
    assert made.status_code == 201, made.text
    assert made.json()["source"] == "hand" and made.json()["pinned"] is True
    assert memory_texts(client, aid) == ["Gwen owes Aldric her life."]
    # Sent from now on: the next prompt carries it (pinned)
    play(client, aid, scripted, "The road.", "walk")
    assert "Gwen owes Aldric her life." in str(scripted.requests[-1])
    # Undo past the moment it belongs to: not recalled there
    for _ in range(2):
        client.post(f"/api/adventures/{aid}/undo")
    assert memory_texts(client, aid) == []
    for bad in ({"text": ""}, {"text": "x" * 2001}, {"text": "ok", "extra": 1}):
        assert client.post(f"/api/adventures/{aid}/memories", json=bad).status_code == 422
    # the page's form, and the terminal's /remember
    client.post(f"/api/adventures/{aid}/redo")
    page = client.post(
        f"/adventures/{aid}/memory/new",
        data={"text": "The ranger hates boats."},
        follow_redirects=True,
    )
    assert "Remembered." in page.text and "written by you" in page.text
    with tk.db.session() as session:
        assert {m.source for m in session.query(Memory)} == {"hand"}


def test_a_hand_memory_never_stands_in_for_a_blocks_summary(
    tk: Talekeeper, client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    aid = adventure_id
    client.put("/api/context/settings", json={"memory_start": 2, "memory_every": 2})
    for n in range(3):
        play(client, aid, scripted, f"Turn {n}.", f"act {n}")
        if n == 1:  # at the end of the first block
            memories.add(tk, aid, memories.MemoryNew(text="A hand memory at a block's end."))
    # the fourth turn; the memory bank's run after it summarises the first block
    scripted.queue("Turn 3.", "A summary of turns one and two.")
    client.post(f"/api/adventures/{aid}/turns", json={"kind": "do", "text": "act 3"})
    import asyncio

    asyncio.run(worker.run_post_turn(tk, aid))  # (again: it has nothing more to do)
    assert "A summary of turns one and two." in memory_texts(client, aid)


def test_the_memory_bank_is_switched_per_adventure(
    tk: Talekeeper,
    client: TestClient,
    adventure_id: int,
    scripted: ScriptedProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aid = adventure_id
    other = client.post(
        "/api/adventures", json={"scenario_id": "greywater-lantern", "answers": {"name": "Ada"}}
    ).json()["id"]
    memories.add(tk, aid, memories.MemoryNew(text="Pinned and remembered.", pinned=True))
    off = client.put(f"/api/adventures/{aid}/memory-bank", json={"enabled": False}).json()
    assert off["bank_on"] is False and off["enabled"] is False
    assert client.get(f"/api/adventures/{other}/memories").json()["bank_on"] is True
    play(client, aid, scripted, "Quiet.", "listen")
    assert "Pinned and remembered." not in str(scripted.requests[-1])  # none sent
    import asyncio

    assert asyncio.run(worker.run_post_turn(tk, aid)) == {"skipped": True}  # none written
    assert memory_texts(client, aid) == ["Pinned and remembered."]  # what it holds is kept
    out = run_play(
        tk, ["/memory on", "/remember The bell rang twice."], monkeypatch, adventure_id=aid
    )
    assert "memory bank is on" in out and "Remembered: The bell rang twice." in out
    play(client, aid, scripted, "Loud.", "listen again")
    assert "Pinned and remembered." in str(scripted.requests[-1])
    page = client.get(f"/adventures/{aid}/memory").text
    assert "memory bank is <strong>on</strong>" in page and "Turn it off" in page


def test_one_turn_can_be_deleted_in_tree_terms(
    tk: Talekeeper,
    client: TestClient,
    adventure_id: int,
    scripted: ScriptedProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aid = adventure_id
    one = play(client, aid, scripted, "One.", "one")["turn"]["id"]
    two = play(client, aid, scripted, "Two.", "two")["turn"]["id"]
    scripted.queue("Two, again.")
    client.post(f"/api/adventures/{aid}/retry")
    retold = story(client, aid)["head_id"]
    # the opening and a turn the story goes on after are refused, nothing changes
    opening = story(client, aid)["turns_shown"][0]["id"]
    for node in (opening, one):
        refused = client.delete(f"/api/adventures/{aid}/turns/{node}")
        assert refused.status_code == 409, refused.text
    # the take being read: the story moves to its other take, which stays whole
    answer = client.delete(f"/api/adventures/{aid}/turns/{retold}").json()
    assert answer["head_id"] == two and answer["turns_shown"][-1]["narration"] == "Two."
    assert answer["turns_shown"][-1]["takes"]["count"] == 1
    # a Save Point keeps its turn
    sp = client.post(f"/api/adventures/{aid}/save-points", json={"name": "Here"}).json()
    assert client.delete(f"/api/adventures/{aid}/turns/{two}").status_code == 409
    client.delete(f"/api/adventures/{aid}/save-points/{sp['id']}")
    # the last turn of the only line: back one turn, Redo has nowhere to go, the line is shorter
    answer = client.delete(f"/api/adventures/{aid}/turns/{two}").json()
    assert answer["head_id"] == one and answer["can_redo"] is False
    assert [
        line["length"] for line in client.get(f"/api/adventures/{aid}/lines").json()["lines"]
    ] == [1]
    with tk.db.session() as session:
        assert session.get(Node, two) is None and session.get(Node, one).active_child_id is None
    # the page's button and the terminal ask first
    out = run_play(tk, ["/delete-turn", "n", "/delete-turn", "y"], monkeypatch, adventure_id=aid)
    assert "Nothing was deleted." in out and "Deleted turn 1." in out
    assert story(client, aid)["head_id"] == opening
    assert tree_ops.list_lines(tk, aid).lines[0].length == 0


def test_a_blank_adventure_starts_from_nothing_but_its_first_lines(
    tk: Talekeeper, client: TestClient, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    opening = "The last train out of the city stops in a field, and the doors open on their own."
    made = client.post("/api/adventures/blank", json={"opening": opening})
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["turns_shown"][0]["narration"] == opening and body["scenario_id"] is None
    assert body["title"] == "The last train out of the city stops in a field, and the…"
    state = client.get(f"/api/adventures/{body['id']}/state").json()
    assert state["view"]["stats"] == [] and state["view"]["flags"] == []
    turn = play(client, body["id"], scripted, "You step down into the wet grass.", "step down")
    assert turn["turn"]["narration"] == "You step down into the wet grass."
    sent = str(scripted.requests[-1])
    assert opening in sent and "second person" in sent  # the plain narrator, and the story
    for bad in ({"opening": ""}, {"opening": "x" * 4001}, {"opening": "ok", "rules": {}}):
        assert client.post("/api/adventures/blank", json=bad).status_code == 422
    # the home page's form (kept on a refusal), and the terminal's menu
    refused = client.post("/adventures/blank", data={"opening": "   ", "title": "Night train"})
    assert refused.status_code == 422 and 'value="Night train"' in refused.text
    page = client.post(
        "/adventures/blank", data={"opening": "Snow on the lighthouse.", "title": "Winter"}
    )
    assert page.status_code == 200 and "Snow on the lighthouse." in page.text
    import talekeeper.terminal.loop as loop

    last = len(loop.adventures.summaries(tk)) + len(loop.scenarios.summaries(tk)) + 2
    monkeypatch.setattr(loop.IntPrompt, "ask", lambda *a, **k: last)  # the blank page is last
    typed = iter(["", "A door in the sea."])
    monkeypatch.setattr(loop.Prompt, "ask", lambda *a, **k: next(typed))
    out = run_play(tk, [], monkeypatch)
    assert "a blank page (you write how it begins)" in out and "A door in the sea." in out
