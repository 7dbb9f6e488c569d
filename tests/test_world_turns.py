"""The state engine inside real turns: proposals validated and applied, refusals fed back,
the protocol never shown, corrections recorded as the player's."""

import json

from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from tests.test_api_turns import sse_events

REPLY = """Maren studies you, then nods once. "Two coins, and you bail."

```state
{"events": [
  {"type": "change_stat", "stat": "npc.maren.trust", "by": 9},
  {"type": "set_flag", "flag": "ferry_hired", "value": true},
  {"type": "set_location", "entity": "Gwendolyn", "location": "docks"}
]}
```"""


def play(client: TestClient, adventure_id: int, text: str) -> dict:
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": text}
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_a_proposal_is_validated_applied_and_reported(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    scripted.queue(REPLY)
    done = play(client, adventure_id, "offer Maren two coins")
    assert "```" not in done["turn"]["narration"] and "events" not in done["turn"]["narration"]
    statuses = [(c["target"], c["status"]) for c in done["changes"]]
    assert ("npc.maren.trust", "limited") in statuses  # asked +9, the cap is 3 a turn
    assert ("flags.ferry_hired", "applied") in statuses or any(
        s == "applied" and "ferry_hired" in (t or "") for t, s in statuses
    )
    rejected = [c for c in done["changes"] if c["status"] == "rejected"]
    assert len(rejected) == 1 and "Maren" in rejected[0]["correction"]  # names the known characters

    state = client.get(f"/api/adventures/{adventure_id}/state").json()
    trust = next(s for s in state["view"]["stats"] if s["path"] == "npc.maren.trust")
    assert trust["value"] == 1 and trust["band"] == "wary"  # -2 + 3
    assert {
        "name": "ferry_hired",
        "value": True,
        "desc": "Maren has agreed to take you across",
    } in state["view"]["flags"]

    # What was lost entirely is put in front of the model on the next turn; the partial limit is not.
    scripted.queue("The ferry rocks.")
    play(client, adventure_id, "step aboard")
    prompt = scripted.requests[-1].messages[-1].content
    assert "Gwendolyn" in prompt
    assert "Maren's trust: wary (1 of 10)" in prompt


def test_the_state_block_never_streams_to_the_reader(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    scripted.queue(REPLY)
    response = client.post(
        f"/api/adventures/{adventure_id}/turns",
        json={"kind": "do", "text": "haggle"},
        headers={"Accept": "text/event-stream"},
    )
    shown = "".join(data["text"] for name, data in sse_events(response.text) if name == "text")
    assert shown.strip().startswith("Maren studies you")
    assert "```" not in shown and "change_stat" not in shown


def test_undo_restores_the_state_exactly(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    before = client.get(f"/api/adventures/{adventure_id}/state").json()["document"]
    scripted.queue(REPLY)
    play(client, adventure_id, "offer coins")
    assert client.get(f"/api/adventures/{adventure_id}/state").json()["document"] != before
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert client.get(f"/api/adventures/{adventure_id}/state").json()["document"] == before


def test_a_player_correction_is_validated_recorded_and_undoable(
    client: TestClient, adventure_id: int
) -> None:
    url = f"/api/adventures/{adventure_id}/state/corrections"
    response = client.post(
        url, json={"events": [{"type": "set_stat", "stat": "player.health", "value": 6}]}
    )
    assert response.status_code == 200, response.text
    assert response.json()["changes"][0]["status"] == "applied"
    health = lambda: next(  # noqa: E731
        s["value"]
        for s in client.get(f"/api/adventures/{adventure_id}/state").json()["view"]["stats"]
        if s["path"] == "player.health"
    )
    assert health() == 6
    story = client.get(f"/api/adventures/{adventure_id}").json()
    assert story["turns_shown"][-1]["action_line"] == "(You corrected the story: Health 10 → 6)"
    audit = client.get(f"/api/adventures/{adventure_id}/state/audit").json()
    assert audit[0]["source"] == "player"

    out_of_range = client.post(
        url, json={"events": [{"type": "set_stat", "stat": "player.health", "value": 99}]}
    )
    assert out_of_range.status_code == 200
    assert out_of_range.json()["changes"][0]["status"] == "limited" and health() == 10

    nonsense = client.post(url, json={"events": [{"type": "teleport", "to": "moon"}]})
    assert nonsense.status_code == 422
    assert health() == 10
    client.post(f"/api/adventures/{adventure_id}/undo")
    assert health() == 6


def test_an_unreadable_block_is_kept_for_audit_and_fed_back(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    scripted.queue('You wait.\n\n```state\n{"events": [{"type": "set_flag", "flag": \n```')
    done = play(client, adventure_id, "wait")
    assert done["turn"]["narration"] == "You wait."
    audit = client.get(f"/api/adventures/{adventure_id}/state/audit").json()
    assert audit[0]["raw"] is not None


def test_published_schemas(client: TestClient) -> None:
    for name in ("rules", "document", "proposal"):
        schema = client.get(f"/api/schemas/{name}").json()
        assert schema.get("$schema") or schema.get("type") == "object"
    assert client.get("/api/schemas/nope").status_code == 404


def test_a_scenario_with_broken_rules_fails_before_play(client: TestClient, tk) -> None:
    from talekeeper.store.models import Scenario

    with tk.db.session() as session:
        session.add(
            Scenario(
                id="broken",
                title="Broken",
                description="",
                data={
                    "id": "broken",
                    "title": "Broken",
                    "opening": "x",
                    "rules": {"stats": {"player": {"hp": {"min": 10, "max": 0, "initial": 5}}}},
                },
            )
        )
    response = client.post("/api/adventures", json={"scenario_id": "broken"})
    assert response.status_code == 422
    assert "stats.player.hp" in response.json()["detail"]
    assert json.dumps(client.get("/api/adventures").json()) == "[]"


def test_structured_state_updates_use_a_second_schema_bound_request(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    assert (
        client.put(
            "/api/settings", json={"generation": {"state_updates": "structured"}}
        ).status_code
        == 200
    )
    scripted.queue(
        "Maren pockets the coins and pushes off.",
        '{"events": [{"type": "change_stat", "stat": "npc.maren.trust", "by": 2}]}',
    )
    done = play(client, adventure_id, "pay Maren")
    narration_request, state_request = scripted.requests[-2:]
    assert (
        "```state" not in narration_request.messages[-1].content
    )  # no emit reminder for the narrator
    assert state_request.json_schema is not None
    enum_ids = str(state_request.json_schema)
    assert "npc.maren.trust" in enum_ids  # narrowed to the stat paths that exist
    assert done["turn"]["narration"] == "Maren pockets the coins and pushes off."
    assert [(c["target"], c["status"]) for c in done["changes"]] == [("npc.maren.trust", "applied")]


def test_a_failed_state_pass_keeps_the_turn_and_the_state(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": "structured"}})
    before = client.get(f"/api/adventures/{adventure_id}/state").json()["document"]
    scripted.queue("The ferry drifts.")  # and no answer for the state pass
    done = play(client, adventure_id, "drift")
    assert done["turn"]["narration"] == "The ferry drifts." and done["changes"] == []
    assert (
        client.get(f"/api/adventures/{adventure_id}/state").json()["document"]["flags"]
        == before["flags"]
    )
    audit = client.get(f"/api/adventures/{adventure_id}/state/audit").json()
    assert "state update could not be made" in audit[0]["parse_error"]


def test_off_sends_no_vocabulary(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    client.put("/api/settings", json={"generation": {"state_updates": "off"}})
    scripted.queue("Quiet.")
    play(client, adventure_id, "listen")
    sent = "\n".join(m.content for m in scripted.requests[-1].messages)
    assert "change_stat" not in sent and "```state" not in sent


def test_origins_choose_where_the_story_starts(client: TestClient) -> None:
    demo = next(s for s in client.get("/api/scenarios").json() if s["id"] == "greywater-lantern")
    assert [o["id"] for o in demo["origins"]] == ["lamp-mender", "cousin"]
    default = client.post("/api/adventures", json={"scenario_id": "greywater-lantern"}).json()
    cousin = client.post(
        "/api/adventures",
        json={
            "scenario_id": "greywater-lantern",
            "origin_id": "cousin",
            "answers": {"name": "Ada"},
        },
    ).json()
    assert "stranger" not in default["turns_shown"][0]["narration"]
    assert cousin["turns_shown"][0]["narration"].startswith("Salt spray")
    state = client.get(f"/api/adventures/{cousin['id']}/state").json()["view"]
    trust = {s["path"]: s["value"] for s in state["stats"]}
    assert trust["npc.maren.trust"] == 4 and trust["npc.tobin.trust"] == -7
    assert {
        "name": "ferry_hired",
        "value": True,
        "desc": "Maren has agreed to take you across",
    } in state["flags"]
    assert any(
        f["predicate"] == "is the cousin of" and f["object"] == "Ada" for f in state["facts"]
    )
    # the overlay extends the world; it does not replace it
    assert any(f["predicate"] == "has been dark since" for f in state["facts"])
    unknown = client.post(
        "/api/adventures", json={"scenario_id": "greywater-lantern", "origin_id": "pirate"}
    )
    assert unknown.status_code == 404 and "lamp-mender, cousin" in unknown.json()["detail"]


def test_a_partly_refused_correction_keeps_the_models_refusals_apart(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    """After a partly refused *player* correction, the next prompt still carries the last
    model turn's refusals and never presents the player's refused edit as the model's."""
    scripted.queue(REPLY)  # the model's Gwendolyn event is rejected
    play(client, adventure_id, "offer Maren two coins")
    url = f"/api/adventures/{adventure_id}/state/corrections"
    events = [
        {"type": "set_stat", "stat": "player.health", "value": 6},
        {"type": "set_location", "entity": "Bartholomew", "location": "docks"},  # refused
    ]
    response = client.post(url, json={"events": events})
    assert response.status_code == 200, response.text
    assert [c["status"] for c in response.json()["changes"]] == ["applied", "rejected"]
    scripted.queue("The ferry rocks.")
    play(client, adventure_id, "step aboard")
    prompt = scripted.requests[-1].messages[-1].content
    assert "Gwendolyn" in prompt  # the model's own refusal survived the correction
    assert "Bartholomew" not in prompt  # the player's refused edit is not the model's


def test_the_crash_checker_accepts_a_correction_step(
    client: TestClient, tk, adventure_id: int
) -> None:
    """A state correction is a story step with no narration; the crash harness's
    consistency checker must not call it half-written (it did)."""
    from tests.reliability.invariants import check_database

    url = f"/api/adventures/{adventure_id}/state/corrections"
    response = client.post(
        url, json={"events": [{"type": "set_stat", "stat": "player.health", "value": 6}]}
    )
    assert response.status_code == 200, response.text
    snap = check_database(tk.db)
    assert any(n.kind == "correction" and not n.narration for n in snap.nodes.values())
