"""An edited narration keeps what its words cannot tell: where people are, who holds what,
who is here and who sleeps or dies are read again from the edited text (the model's
changes of those kinds described the old text), while a stat, a switch, a goal or a
moment the model proposed is kept from the original take, checked again — and its chip
says so."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import state_engine
from talekeeper.state import load_rules
from talekeeper.state.told import beyond_reading
from tests.test_tree_api import play

HANDED = "Tobin hands you the brass key. You cut your hand on its teeth."


def block(*events: dict) -> str:
    return "\n```state\n" + json.dumps({"events": list(events)}) + "\n```"


HURT = {"type": "change_stat", "stat": "player.health", "by": -2}
HIRED = {"type": "set_flag", "flag": "ferry_hired", "value": True}
MOMENT = {"type": "record_moment", "text": "Tobin gave up his daughter's key.", "weight": 7}
NOTE = {"type": "note_event", "text": "Tobin gave the key away."}
KEY = {"type": "set_possession", "item": "brass_key", "holder": "player"}


@pytest.fixture
def turn(client: TestClient, adventure_id: int, scripted: ScriptedProvider) -> dict:
    """In the cottage with Tobin, a turn whose model handed over the key, hurt you, hired
    the ferry and remembered the moment."""
    play(client, adventure_id, scripted, "You walk into the keeper's cottage.", "go")
    reply = HANDED + block(KEY, HURT, HIRED, MOMENT, NOTE)
    one = play(client, adventure_id, scripted, reply, "ask for the key")["turn"]
    state = document(client, adventure_id)
    assert state["possessions"]["brass_key"] == "player"
    assert state["stats"]["player"]["health"]["value"] == 8
    return one


def document(client: TestClient, adventure_id: int) -> dict:
    return client.get(f"/api/adventures/{adventure_id}/state").json()["document"]


def edit(client: TestClient, adventure_id: int, turn: dict, text: str) -> dict:
    response = client.post(
        f"/api/adventures/{adventure_id}/turns/{turn['id']}/edit", json={"narration": text}
    )
    assert response.status_code == 200, response.text
    return response.json()["turns_shown"][-1]


def kept_things(state: dict) -> tuple:
    return (
        state["stats"]["player"]["health"]["value"],
        state["flags"]["ferry_hired"],
        [m["text"] for m in state["moments"]],
    )


def test_a_typo_fix_keeps_every_change(client: TestClient, adventure_id: int, turn: dict) -> None:
    shown = edit(client, adventure_id, turn, HANDED.replace("your hand", "you hand"))
    state = document(client, adventure_id)
    assert kept_things(state) == (8, True, [MOMENT["text"]])
    assert state["possessions"]["brass_key"] == "player"  # read again from the edited words
    by = {c["type"]: c for c in shown["changes"]}
    assert by["set_possession"]["by"] == "narration"
    assert "Read from the narration" in by["set_possession"]["chip"]["detail"]
    for kind in ("change_stat", "set_flag", "record_moment"):
        assert by[kind]["status"] == "applied"
        assert by[kind]["chip"]["detail"].startswith(state_engine.KEPT_FROM)
    assert "note_event" not in by  # the model's note told the old text; code writes the line
    assert by["kept_changes"]["chip"]["text"] == state_engine.KEPT_CHANGES


def test_an_edit_that_drops_the_handing_over_drops_that_change(
    client: TestClient, adventure_id: int, turn: dict
) -> None:
    shown = edit(client, adventure_id, turn, "Tobin glares at you. You cut your hand on a nail.")
    state = document(client, adventure_id)
    assert state["possessions"]["brass_key"] == "tobin"  # the model's hand-over is gone
    assert kept_things(state) == (8, True, [MOMENT["text"]])
    assert "set_possession" not in {c["type"] for c in shown["changes"]}


def test_an_edit_that_adds_a_move_adds_it(
    client: TestClient, adventure_id: int, turn: dict
) -> None:
    text = HANDED + " You climb the hill and go into the lighthouse."
    shown = edit(client, adventure_id, turn, text)
    state = document(client, adventure_id)
    assert state["entities"]["player"]["location"] == "lighthouse"
    assert state["possessions"]["brass_key"] == "player"
    assert kept_things(state) == (8, True, [MOMENT["text"]])
    moved = [c for c in shown["changes"] if c["type"] == "set_location"]
    assert moved and all(c["by"] == "narration" for c in moved)


def test_an_edit_with_a_state_block_keeps_nothing(
    client: TestClient, adventure_id: int, turn: dict
) -> None:
    text = HANDED + block({"type": "change_stat", "stat": "player.health", "by": -1})
    shown = edit(client, adventure_id, turn, text)
    state = document(client, adventure_id)
    assert kept_things(state) == (9, False, [])
    assert state["possessions"]["brass_key"] == "player"  # the words still tell it
    assert "kept_changes" not in {c["type"] for c in shown["changes"]}


def test_an_edit_of_an_edit_keeps_them_still(
    client: TestClient, adventure_id: int, turn: dict
) -> None:
    first = edit(client, adventure_id, turn, "Tobin glares at you. You cut your hand.")
    edit(client, adventure_id, first, "Tobin glares at you, and you cut your hand.")
    assert kept_things(document(client, adventure_id)) == (8, True, [MOMENT["text"]])


@pytest.mark.parametrize(
    ("event", "kept"),
    [
        (KEY, None),
        ({"type": "clear_possession", "item": "brass_key"}, None),
        ({"type": "set_location", "entity": "tobin", "location": "docks"}, None),
        ({"type": "set_scene", "location": "docks", "present": ["maren"]}, None),
        (
            {"type": "set_scene", "present": ["maren"], "time": "dusk"},
            {"type": "set_scene", "time": "dusk"},
        ),
        ({"type": "set_status", "entity": "tobin", "status": "dead"}, None),
        ({"type": "set_status", "entity": "tobin", "status": "Asleep"}, None),
        ({"type": "set_status", "entity": "tobin", "status": "alive"}, None),
        (
            {"type": "set_status", "entity": "tobin", "status": "unconscious"},
            {"type": "set_status", "entity": "tobin", "status": "unconscious"},
        ),
        (HURT, HURT),
        (HIRED, HIRED),
        (MOMENT, MOMENT),
        (
            {"type": "reach_milestone", "milestone": "got_key"},
            {"type": "reach_milestone", "milestone": "got_key"},
        ),
    ],
)
def test_what_the_reader_could_never_tell(event: dict, kept: dict | None) -> None:
    from tests.state.test_notes import GREYWATER

    assert beyond_reading(event, load_rules(json.loads(json.dumps(GREYWATER)))) == kept
