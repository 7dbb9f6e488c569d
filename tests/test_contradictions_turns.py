"""The narration read in a turn, over the JSON API with a scripted model: the warning a
clash leaves (on the turn as played and as stored, in Insights with its rule), its two
answers (accept: a correction Undo takes back; retry), the changes read from the narration
as real chips Undo takes back, and the setting (off / flag / retry)."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import tree_ops
from talekeeper.service.app import Talekeeper
from tests.test_tree_api import play, story

ABSENT = "Tobin hands you a mug of tea and grins."
TRUTHFUL = "You think of Tobin up in his cottage, and Maren says he keeps the key."


def state(tk: Talekeeper, adventure_id: int) -> dict:
    return tree_ops.current_state(tk, adventure_id)


def streamed(client: TestClient, adventure_id: int, text: str = "wait") -> list[tuple[str, dict]]:
    """A turn played over SSE: its (event, data) pairs, in order."""
    with client.stream(
        "POST",
        f"/api/adventures/{adventure_id}/turns",
        json={"kind": "do", "text": text},
        headers={"Accept": "text/event-stream"},
    ) as response:
        lines = [line for line in response.iter_lines() if line.startswith(("event:", "data:"))]
    kinds = [line[6:].strip() for line in lines if line.startswith("event:")]
    data = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    return list(zip(kinds, data, strict=True))


def test_a_clash_is_flagged_on_the_turn_as_played_and_as_stored(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    done = play(client, adventure_id, scripted, ABSENT)
    (clash,) = done["turn"]["contradictions"]
    assert clash == {
        "kind": "presence",
        "subject": "Tobin",
        "says": ABSENT,
        "state": "Tobin is at Keeper's cottage",
        "line": "Tobin is at Keeper's cottage, not here",
    }
    stored = story(client, adventure_id)["turns_shown"][-1]
    assert stored["contradictions"] == [clash]
    # the page shows the line and both answers on the turn being read
    page = client.get(f"/adventures/{adventure_id}").text
    assert "Tobin is at Keeper&#39;s cottage, not here" in page
    assert "Tell it again" in page and "update the state" in page
    # Insights and the audit trail name the rule that fired and what accepting would do
    audit = client.get(f"/api/adventures/{adventure_id}/state/audit").json()[0]
    assert audit["contradictions"][0]["rule"].startswith("presence: elsewhere")
    assert audit["contradictions"][0]["events"]
    insights = client.get(f"/adventures/{adventure_id}/insights?turn={done['turn']['id']}").text
    assert "What the narration said that the state does not" in insights
    assert "presence: elsewhere" in insights


def test_a_truthful_mention_is_not_flagged(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    done = play(client, adventure_id, scripted, TRUTHFUL)
    assert done["turn"]["contradictions"] == []
    assert "update the state" not in client.get(f"/adventures/{adventure_id}").text


def test_accepting_a_warning_corrects_the_state_and_undo_takes_it_back(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    turn = play(client, adventure_id, scripted, ABSENT)["turn"]
    url = f"/api/adventures/{adventure_id}/turns/{turn['id']}/contradictions/0/accept"
    answer = client.post(url)
    assert answer.status_code == 200, answer.text
    now = state(tk, adventure_id)
    assert "tobin" in now["scene"]["present"]
    assert now["entities"]["tobin"]["location"] == "docks"
    shown = answer.json()["story"]["turns_shown"]
    assert shown[-1]["kind"] == "correction" and shown[-1]["answers"] is True
    assert shown[-2]["id"] == turn["id"] and shown[-2]["answers"] is False
    # a second accept is refused: the turn is no longer the one being read
    assert client.post(url).status_code == 409
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert "tobin" not in state(tk, adventure_id)["scene"]["present"]
    # a warning that does not exist
    missing = f"/api/adventures/{adventure_id}/turns/{turn['id']}/contradictions/5/accept"
    assert client.post(missing).status_code == 404


def test_the_page_answers_accept_with_the_story(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    turn = play(client, adventure_id, scripted, ABSENT)["turn"]
    page = client.post(
        f"/adventures/{adventure_id}/turns/{turn['id']}/contradictions/0/accept",
        data={"shown_head": turn["id"], "shown_first": turn["id"]},
    )
    assert page.status_code == 200
    # the page is patched: the correction is put in after the turn, which stays as it was
    assert "You made the state agree with the story" in page.text
    assert f'id="turn-{turn["id"]}"' not in page.text
    assert "tobin" in state(tk, adventure_id)["scene"]["present"]
    # refused (the turn is no longer the last): said under the story, nothing changed
    again = client.post(f"/adventures/{adventure_id}/turns/{turn['id']}/contradictions/0/accept")
    assert "moved on from" in again.text


def test_a_dead_man_cannot_be_accepted_back_to_life(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    dead = (
        '```state\n{"events": [{"type": "set_status", "entity": "tobin", "status": "dead"}]}\n```'
    )
    play(client, adventure_id, scripted, "A wave takes the old keeper.\n\n" + dead)
    turn = play(client, adventure_id, scripted, "Tobin laughs at the storm.")["turn"]
    assert [c["kind"] for c in turn["contradictions"]] == ["status"]
    assert turn["contradictions"][0]["line"] == "Tobin is dead and cannot speak"
    url = f"/api/adventures/{adventure_id}/turns/{turn['id']}/contradictions/0/accept"
    refused = client.post(url)
    assert refused.status_code == 422  # canon: dead → * is forbidden in Greywater
    assert state(tk, adventure_id)["entities"]["tobin"]["status"] == "dead"


def test_a_told_move_is_a_real_chip_that_undo_takes_back(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    done = play(client, adventure_id, scripted, "You climb the steps and go into the lighthouse.")
    told = [c for c in done["changes"] if c["by"] == "narration"]
    assert [c["type"] for c in told] == ["set_location", "set_scene"]
    assert all(c["status"] == "applied" for c in told)
    assert "lighthouse" in told[0]["chip"]["text"]
    assert told[0]["chip"]["detail"].startswith("Read from the narration")
    assert done["turn"]["contradictions"] == []
    assert state(tk, adventure_id)["entities"]["player"]["location"] == "lighthouse"
    # stored as played; the audit says it was read from the narration, not the model's
    assert story(client, adventure_id)["turns_shown"][-1]["changes"] == done["changes"]
    audit = client.get(f"/api/adventures/{adventure_id}/state/audit").json()[0]
    assert audit["read"][0]["sentence"] == "You climb the steps and go into the lighthouse."
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert state(tk, adventure_id)["entities"]["player"]["location"] == "docks"


def test_a_change_the_model_proposed_is_not_read_again(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    moved = json.dumps(
        {"events": [{"type": "set_location", "entity": "player", "location": "lighthouse"}]}
    )
    done = play(
        client,
        adventure_id,
        scripted,
        "You go into the lighthouse.\n\n```state\n" + moved + "\n```",
    )
    assert [c["by"] for c in done["changes"]] == ["story"]
    assert state(tk, adventure_id)["entities"]["player"]["location"] == "lighthouse"


def test_the_setting_off_says_nothing_but_still_reads_changes(
    client: TestClient, tk: Talekeeper, adventure_id: int, scripted: ScriptedProvider
) -> None:
    client.put("/api/settings", json={"generation": {"contradictions": "off"}})
    done = play(client, adventure_id, scripted, ABSENT + " You go into the lighthouse.")
    assert done["turn"]["contradictions"] == []
    assert state(tk, adventure_id)["entities"]["player"]["location"] == "lighthouse"


def test_the_setting_retry_tells_a_clashing_narration_again_once(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    assert (
        client.put("/api/settings", json={"generation": {"contradictions": "retry"}}).status_code
        == 200
    )
    scripted.queue(ABSENT)
    scripted.queue("Maren hands you a coil of wet rope.")
    assert "retold" in [kind for kind, _data in streamed(client, adventure_id)]
    kept = story(client, adventure_id)["turns_shown"][-1]
    assert kept["narration"] == "Maren hands you a coil of wet rope."
    assert kept["contradictions"] == []
    audit = client.get(f"/api/adventures/{adventure_id}/state/audit").json()[0]
    assert audit["retold"]["narration"] == ABSENT
    assert audit["retold"]["contradictions"][0]["kind"] == "presence"
    # told again only once: a second clash is kept, with its warning
    scripted.queue(ABSENT)  # the first telling (play queues the second)
    done = play(client, adventure_id, scripted, ABSENT, "wait again")
    assert done["turn"]["narration"] == ABSENT
    assert [c["kind"] for c in done["turn"]["contradictions"]] == ["presence"]


def test_retry_in_structured_mode_keeps_the_first_telling_once_the_turn_is_settled(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    client.put(
        "/api/settings",
        json={"generation": {"contradictions": "retry", "state_updates": "structured"}},
    )
    scripted.queue(ABSENT)  # the first telling: told again
    scripted.queue("Maren coils her rope and says nothing.")  # the second: kept
    scripted.queue('{"events": [{"type": "change_stat", "stat": "npc.maren.trust", "by": 1}]}')
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "wait"}
    )
    assert response.status_code == 200, response.text
    turn = response.json()["turn"]
    assert turn["narration"] == "Maren coils her rope and says nothing."
    assert [c["type"] for c in response.json()["changes"]] == ["change_stat"]  # the state pass
    audit = client.get(f"/api/adventures/{adventure_id}/state/audit").json()[0]
    assert audit["retold"]["narration"] == ABSENT


def test_a_clash_the_state_pass_resolves_is_gone_once_the_turn_is_settled(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": "structured"}})
    scripted.queue(ABSENT)
    scripted.queue(
        json.dumps(
            {
                "events": [
                    {"type": "set_location", "entity": "tobin", "location": "docks"},
                    {"type": "set_scene", "present": ["maren", "tobin"]},
                ]
            }
        )
    )
    events = dict(streamed(client, adventure_id))
    done, settled = events["done"], events["settled"]
    assert [c["kind"] for c in done["turn"]["contradictions"]] == ["presence"]  # as written
    assert settled["turn"]["contradictions"] == []  # the model's state pass brought Tobin in
    assert story(client, adventure_id)["turns_shown"][-1]["contradictions"] == []
    assert "Tobin is at Keeper" not in client.get(f"/adventures/{adventure_id}").text


def test_the_terminal_shows_the_warning_and_accept_updates_the_state(
    tk: Talekeeper, scripted: ScriptedProvider, monkeypatch
) -> None:
    from tests.test_terminal_ux import run_play, start

    aid = start(tk)
    scripted.queue(ABSENT)
    out = run_play(
        tk, ["wait for the keeper", "/accept 2", "/accept"], monkeypatch, adventure_id=aid
    )
    assert "⚠ Tobin is at Keeper's cottage, not here" in out
    assert "/retry tells it again" in out
    assert "This turn has no warning 2 to accept." in out
    assert "The state now agrees with the story" in out
    assert "tobin" in state(tk, aid)["scene"]["present"]
