"""The player's own changes read from their Do action in a played turn, over the JSON API
with a scripted model: a move the narration leaves unsaid is a real chip marked as read
from the action (in the audit and Insights too) that Undo takes back; a Say action, a
narration that blocks the way and a model's own move read nothing from the action."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import tree_ops
from talekeeper.service.app import Talekeeper
from tests.test_tree_api import play, story

QUIET = "The keeper's cottage, the only way to reach the headland. Rain hammers the shutters."
WALK = "walk to the keeper's cottage"


def where(tk: Talekeeper, adventure_id: int) -> str:
    return tree_ops.current_state(tk, adventure_id)["entities"]["player"]["location"]


def test_a_move_the_narration_leaves_unsaid_is_read_from_the_action_and_undone(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    done = play(client, adventure_id, scripted, QUIET, text=WALK)
    read = [c for c in done["changes"] if c["by"] == "narration"]
    assert [c["type"] for c in read] == ["set_location", "set_scene"]
    assert all(c["status"] == "applied" for c in read)
    assert "cottage" in read[0]["chip"]["text"].casefold()
    assert read[0]["chip"]["detail"] == "Read from your action: “You walk to the keeper's cottage.”"
    assert done["turn"]["contradictions"] == []
    assert where(tk, adventure_id) == "cottage"
    # stored as played; the audit and Insights say it came from the action
    assert story(client, adventure_id)["turns_shown"][-1]["changes"] == done["changes"]
    audit = client.get(f"/api/adventures/{adventure_id}/state/audit").json()[0]
    assert [(r["from"], r["sentence"]) for r in audit["read"]] == [
        ("action", "You walk to the keeper's cottage.")
    ]
    insights = client.get(f"/adventures/{adventure_id}/insights?turn={done['turn']['id']}").text
    assert "Read from your action: “You walk to the keeper&#39;s cottage.”" in insights
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert where(tk, adventure_id) == "docks"


def test_a_narration_that_blocks_the_way_moves_nobody(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    done = play(client, adventure_id, scripted, "The hill path is flooded waist-deep.", text=WALK)
    assert [c for c in done["changes"] if c["by"] == "narration"] == []
    assert where(tk, adventure_id) == "docks"


def test_a_say_action_is_never_read_as_a_deed(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    play(client, adventure_id, scripted, QUIET, text="I walk to the keeper's cottage", kind="say")
    assert where(tk, adventure_id) == "docks"


def test_the_models_own_move_wins_over_the_action(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    moved = json.dumps(
        {"events": [{"type": "set_location", "entity": "player", "location": "lighthouse"}]}
    )
    done = play(client, adventure_id, scripted, f"{QUIET}\n\n```state\n{moved}\n```", text=WALK)
    assert [c["by"] for c in done["changes"]] == ["story"]
    assert where(tk, adventure_id) == "lighthouse"
