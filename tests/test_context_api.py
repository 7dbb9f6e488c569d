"""The context and memory API and pages, over HTTP."""

from __future__ import annotations

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.memory import bank
from talekeeper.memory.worker import worker_for
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Adventure, ContextText, Memory, TurnInsight


def play(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int, text: str, reply: str
) -> dict:
    scripted.queue(reply)
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": text}
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_insights_for_a_turn_and_dry_run(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    done = play(client, scripted, adventure_id, "walk to the docks", "Maren watches you come.")
    node_id = done["turn"]["id"]
    data = client.get(f"/api/adventures/{adventure_id}/turns/{node_id}/insights").json()
    assert data["verified"] is True and data["stored"] is True
    names = [s["name"] for s in data["sections"]]
    fixed = ["narrator", "length", "persona", "ai_instructions", "plot_essentials"]
    assert [n for n in names if n in fixed] == fixed and names[:3] == fixed[:3]
    assert "history" in names and names[-1] == "emit_reminder" and "action" in names
    docks = next(i for i in data["triggered_cards"] if i["key"] == "The docks")
    assert docks["why"] == "trigger 'dock' in your action; placed after the history"
    # The stored prompt is exactly what the provider received.
    sent = scripted.requests[-1]
    assert [m["content"] for m in data["prompt"]["messages"]] == [m.content for m in sent.messages]
    # Maren, mentioned by the reply, joins on the next turn — the dry run shows it.
    nxt = client.get(
        f"/api/adventures/{adventure_id}/insights/next", params={"kind": "say", "text": "Hello"}
    ).json()
    assert nxt["dry_run"] is True and nxt["turn"] == 2
    maren = next(i for i in nxt["triggered_cards"] if i["key"] == "Maren")
    assert (
        "turn 1" in maren["why"] and maren["included"]
    )  # fired on turn 1's narration (and lingers)
    # ... and so is Maren the character: in scene, named to the state engine.
    assert nxt["in_scene"] == ["maren"]
    state = next(s for s in nxt["sections"] if s["name"] == "current_state")
    assert "in scene: maren ('maren' in turn 1 (narration))" in state["why"]
    assert '> You say "Hello."' in nxt["prompt"]["messages"][-1]["content"]
    assert len(scripted.requests) == 1  # the dry run called no model


def test_insights_errors(client: TestClient, adventure_id: int) -> None:
    story = client.get(f"/api/adventures/{adventure_id}").json()
    root = story["turns_shown"][0]["id"]
    assert client.get(f"/api/adventures/{adventure_id}/turns/{root}/insights").status_code == 404
    assert client.get(f"/api/adventures/{adventure_id}/turns/99999/insights").status_code == 404
    assert client.get("/api/adventures/999/insights/next").status_code == 404
    assert (
        client.get(
            f"/api/adventures/{adventure_id}/insights/next", params={"kind": "do"}
        ).status_code
        == 422
    )


def test_insights_are_stored_compactly(
    client: TestClient, scripted: ScriptedProvider, tk: Talekeeper, adventure_id: int
) -> None:
    narration = "The wind rises over Greywater and the rain comes in sideways off the sea. " * 3
    # No memory bank here: its background summaries would race the turns for scripted replies.
    assert client.put("/api/context/settings", json={"memory_enabled": False}).status_code == 200
    for turn in range(30):
        play(client, scripted, adventure_id, f"keep walking, step {turn}", narration + str(turn))
    with tk.db.session() as session:
        rows = session.query(TurnInsight).filter_by(adventure_id=adventure_id).all()
        records = sum(len(TurnInsight.data.type.process_bind_param(r.data, None)) for r in rows)
        texts = sum(
            len(t.text) for t in session.query(ContextText).filter_by(adventure_id=adventure_id)
        )
    per_turn = (records + texts) / len(rows)
    assert len(rows) == 30
    # History is referenced, not copied: a turn's Insights stay well under 1 KB.
    assert per_turn < 1024, per_turn


def test_plot_components_read_and_edit(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    plot = client.get(f"/api/adventures/{adventure_id}/plot").json()
    assert plot["persona"]["name"] == "Ada"
    assert plot["author_note"].startswith("Build tension")
    assert plot["story_summary_source"] == "plot components: story summary"
    response = client.put(
        f"/api/adventures/{adventure_id}/plot",
        json={
            "author_note": "Keep it short.",
            "persona": {"name": "Bea", "pronouns": "she/her", "description": "A diver."},
        },
    )
    assert response.status_code == 200 and response.json()["author_note"] == "Keep it short."
    assert client.put(f"/api/adventures/{adventure_id}/plot", json={"nope": 1}).status_code == 422
    assert (
        client.put(
            f"/api/adventures/{adventure_id}/plot", json={"author_note": "x" * 2001}
        ).status_code
        == 422
    )
    nxt = client.get(f"/api/adventures/{adventure_id}/insights/next").json()
    sent = "\n".join(m["content"] for m in nxt["prompt"]["messages"])
    assert "[Author's note: Keep it short.]" in sent and "You are Bea (she/her). A diver." in sent
    # A summary edit is kept at the current turn: undo past it and the old one is back.
    play(client, scripted, adventure_id, "wait", "Time passes.")
    client.put(f"/api/adventures/{adventure_id}/plot", json={"story_summary": "Bea arrived."})
    plot = client.get(f"/api/adventures/{adventure_id}/plot").json()
    assert (
        plot["story_summary"] == "Bea arrived."
        and plot["story_summary_source"] == "your edit at turn 1"
    )
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert client.get(f"/api/adventures/{adventure_id}/plot").json()["story_summary"] == ""
    client.post(f"/api/adventures/{adventure_id}/redo")
    assert (
        client.get(f"/api/adventures/{adventure_id}/plot").json()["story_summary"] == "Bea arrived."
    )


def test_story_cards_crud_and_trigger(client: TestClient, adventure_id: int) -> None:
    base = f"/api/adventures/{adventure_id}/story-cards"
    cards = client.get(base).json()
    assert [c["name"] for c in cards][:2] == ["Maren", "Tobin"]
    new = client.post(
        base,
        json={
            "type": "creature",
            "name": "Dragon",
            "entry": "A sea dragon sleeps in the bay.",
            "triggers": "dragon, wyrm",
        },
    )
    assert new.status_code == 201 and new.json()["trigger_list"] == ["dragon", "wyrm"]
    index = new.json()["index"]
    assert (
        client.post(base, json={"name": "Empty", "entry": "", "triggers": "x"}).status_code == 422
    )
    assert (
        client.post(
            base, json={"name": "Blind", "entry": "Never seen.", "triggers": " , "}
        ).status_code
        == 422
    )
    assert (
        client.post(base, json={"name": "x", "entry": "y", "triggers": "z", "extra": 1}).status_code
        == 422
    )
    nxt = client.get(
        f"/api/adventures/{adventure_id}/insights/next",
        params={"kind": "do", "text": "look for the WYRMS"},
    ).json()
    dragon = next(i for i in nxt["triggered_cards"] if i["key"] == "Dragon")
    assert (
        dragon["why"] == "trigger 'wyrm' in your action; placed after the history"
        and dragon["included"]
    )
    assert (
        client.put(
            f"{base}/{index}", json={"name": "Dragon", "entry": "Gone.", "triggers": "dragon"}
        ).json()["entry"]
        == "Gone."
    )
    assert (
        client.put(f"{base}/999", json={"name": "x", "entry": "y", "triggers": "zebra"}).status_code
        == 404
    )
    assert client.delete(f"{base}/{index}").status_code == 204
    assert "Dragon" not in [c["name"] for c in client.get(base).json()]
    assert client.delete(f"{base}/{index}").status_code == 404


def test_memory_panel_edit_pin_forget_delete(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    for turn in range(3):
        play(client, scripted, adventure_id, f"step {turn}", f"Step {turn} is taken.")
    with tk.db.session() as session:
        adventure = session.get(Adventure, adventure_id)
        path = bank.path_ids(session, adventure.head_node_id)
        block = bank.Block(1, 2, path[2])
        memory_id = bank.add_memory(session, adventure_id, block, "Ada took two steps.").id
    base = f"/api/adventures/{adventure_id}/memories"
    data = client.get(base).json()
    assert [m["id"] for m in data["memories"]] == [memory_id]
    assert data["memories"][0]["state"] == "idle" and data["retrieval"] == "lexical (BM25)"
    edited = client.patch(
        f"{base}/{memory_id}", json={"text": "Ada  took   three steps.", "pinned": True}
    ).json()
    assert (
        edited["text"] == "Ada took three steps."
        and edited["pinned"]
        and edited["source"] == "player"
    )
    # Pinned memories are always sent, and say so.
    nxt = client.get(f"/api/adventures/{adventure_id}/insights/next").json()
    assert nxt["retrieved_memories"][0]["why"] == "pinned"
    forgotten = client.patch(f"{base}/{memory_id}", json={"forgotten": True}).json()
    assert forgotten["state"] == "forgotten" and not forgotten["pinned"]
    nxt = client.get(f"/api/adventures/{adventure_id}/insights/next").json()
    assert nxt["retrieved_memories"] == []
    assert client.patch(f"{base}/{memory_id}", json={"bogus": True}).status_code == 422
    assert client.delete(f"{base}/{memory_id}").status_code == 204
    assert client.get(base).json()["memories"] == []
    assert client.patch(f"{base}/{memory_id}", json={"pinned": True}).status_code == 404
    with tk.db.session() as session:
        tombstone = session.get(Memory, memory_id)
        assert tombstone.status == "deleted" and tombstone.text == ""  # the block is not re-written


def test_background_work_runs_after_turns_over_http(
    client: TestClient, tk: Talekeeper, adventure_id: int
) -> None:
    provider = ScriptedProvider(
        lambda r: (
            "Ada walked the harbour."
            if "[talekeeper:memory]" in r.messages[0].content
            else "Rain falls."
        )
    )
    tk.provider_override = provider
    for turn in range(12):
        response = client.post(
            f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": f"step {turn}"}
        )
        assert response.status_code == 200
    client.portal.call(worker_for(tk).drain)
    data = client.get(f"/api/adventures/{adventure_id}/memories").json()
    assert [m["turns"] for m in data["memories"]] == [[1, 6]]
    assert data["memories"][0]["text"] == "Ada walked the harbour."


def test_context_settings(client: TestClient) -> None:
    assert client.get("/api/context/settings").json()["memory_top_k"] == 3
    updated = client.put(
        "/api/context/settings", json={"memory_top_k": 4, "author_note_depth": 1}
    ).json()
    assert updated["memory_top_k"] == 4 and updated["author_note_depth"] == 1
    assert client.put("/api/context/settings", json={"memory_top_k": -1}).status_code == 422
    assert client.put("/api/context/settings", json={"unknown": 1}).status_code == 422


def test_pages_render_and_forms_work(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    done = play(client, scripted, adventure_id, "look", "<script>alert(1)</script> The sea.")
    play_page = client.get(f"/adventures/{adventure_id}").text
    for link in ("insights", "memory", "cards", "plot"):
        assert f"/adventures/{adventure_id}/{link}" in play_page
        assert client.get(f"/adventures/{adventure_id}/{link}").status_code == 200
    turn_page = client.get(
        f"/adventures/{adventure_id}/insights", params={"turn": done["turn"]["id"]}
    ).text
    assert "verified" in turn_page and "<script>alert(1)</script>" not in turn_page
    assert (
        client.get(f"/adventures/{adventure_id}/insights", params={"turn": 99999}).status_code
        == 404
    )
    response = client.post(
        f"/adventures/{adventure_id}/cards/new",
        data={
            "type": "item",
            "name": "Oar",
            "entry": "A broken oar.",
            "triggers": "oar",
            "notes": "",
        },
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert "A broken oar." in client.get(f"/adventures/{adventure_id}/cards").text
    bad = client.post(
        f"/adventures/{adventure_id}/cards/new", data={"name": "x", "entry": "", "triggers": "x"}
    )
    assert "needs an entry" in bad.text
    saved = client.post(
        f"/adventures/{adventure_id}/plot/save",
        data={"persona_name": "Cy", "author_note": "Whisper.", "narrator_instructions": "Narrate."},
    )
    assert saved.status_code == 200 and "Whisper." in saved.text


def test_deleting_an_adventure_takes_its_context_rows(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, scripted, adventure_id, "look", "The sea.")
    with tk.db.session() as session:
        path = bank.path_ids(session, session.get(Adventure, adventure_id).head_node_id)
        bank.add_memory(session, adventure_id, bank.Block(1, 1, path[1]), "Ada looked at the sea.")
    client.put(f"/api/adventures/{adventure_id}/plot", json={"story_summary": "Ada looked."})
    assert client.delete(f"/api/adventures/{adventure_id}").status_code == 204
    with tk.db.session() as session:
        for model in (TurnInsight, ContextText, Memory):
            assert session.query(model).count() == 0, model.__name__


def test_insights_page_lists_recent_turns(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    first = play(client, scripted, adventure_id, "look", "The sea.")["turn"]["id"]
    play(client, scripted, adventure_id, "listen", "The gulls.")
    page = client.get(f"/adventures/{adventure_id}/insights").text
    assert f"/adventures/{adventure_id}/insights?turn={first}" in page and "turn 2" in page


def test_a_gated_card_follows_the_state_through_undo_and_redo(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    """A card gated on a flag fires once the flag is set, leaves on Undo, returns on Redo."""
    card = {
        "name": "Hired ferry",
        "entry": "Maren's ferry waits for you.",
        "triggers": "",
        "gates": [{"kind": "flag", "id": "ferry_hired"}],
    }
    assert client.post(f"/api/adventures/{adventure_id}/story-cards", json=card).status_code == 201
    bad = client.post(
        f"/api/adventures/{adventure_id}/story-cards",
        json={**card, "gates": [{"kind": "flag", "id": "ferry_hierd"}]},
    )
    assert bad.status_code == 422 and "no flag 'ferry_hierd'" in bad.text

    def fired() -> list[str]:
        nxt = client.get(f"/api/adventures/{adventure_id}/insights/next").json()
        return [i["key"] for i in nxt["triggered_cards"] if i["included"]]

    assert "Hired ferry" not in fired()
    play(
        client,
        scripted,
        adventure_id,
        "offer coins",
        'Maren nods.\n\n```state\n{"events": [{"type": "set_flag", "flag": "ferry_hired", "value": true}]}\n```',
    )
    assert "Hired ferry" in fired()
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert "Hired ferry" not in fired()
    client.post(f"/api/adventures/{adventure_id}/redo")
    assert "Hired ferry" in fired()


def test_sticky_and_cooldown_count_turns_on_the_path(
    client: TestClient, scripted: ScriptedProvider, adventure_id: int
) -> None:
    card = {
        "name": "Bell",
        "entry": "The drowned bell tolls.",
        "triggers": "bell",
        "scan_depth": 0,
        "sticky": 1,
        "cooldown": 2,
    }
    assert client.post(f"/api/adventures/{adventure_id}/story-cards", json=card).status_code == 201
    sent = []
    for action in ("ring the bell", "wait", "ring the bell", "ring the bell", "ring the bell"):
        node = play(client, scripted, adventure_id, action, "Time passes.")["turn"]["id"]
        data = client.get(f"/api/adventures/{adventure_id}/turns/{node}/insights").json()
        sent.append(any(i["key"] == "Bell" and i["included"] for i in data["triggered_cards"]))
    assert sent == [
        True,
        True,
        False,
        False,
        True,
    ]  # fired, sticky for 1, cooling down for 2, fires again
