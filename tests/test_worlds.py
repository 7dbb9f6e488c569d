"""Worlds with secrets (issue 11), end to end through the API with the scripted model:
origins with their own openings, quests and constraints; character creation; an NPC whose
private knowledge enters only their own call; banter from an early moment; the canon log."""

from __future__ import annotations

import json
import random
import re

import jsonschema
import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures as adventure_service
from talekeeper.state.schema import canon_log_schema

FENMOUTH = "fenmouth-ledger"
SECRET = "burned the ledger herself"  # from Oda Fenn's knowledge
BRANNOC_SECRET = "owes its paymaster a favour"  # from Brannoc's knowledge


def start(client: TestClient, origin: str, **character) -> dict:
    body = {
        "scenario_id": FENMOUTH,
        "origin_id": origin,
        "character": {"name": "Aldric", **character},
    }
    response = client.post("/api/adventures", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def turn(client: TestClient, adventure_id: int, kind: str, text: str, **extra) -> dict:
    response = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": kind, "text": text, **extra}
    )
    assert response.status_code == 200, response.text
    return response.json()


def prompt_of(request) -> str:
    return (
        request.prompt
        if request.mode == "completion"
        else "\n".join(m.content for m in request.messages)
    )


def state(client: TestClient, adventure_id: int) -> dict:
    return client.get(f"/api/adventures/{adventure_id}/state").json()


def test_two_origins_give_different_openings_state_and_quests(client: TestClient) -> None:
    deserter = start(
        client, "deserter", **{"class": "sellsword", "stats": {"might": 4, "wits": 2, "grace": 3}}
    )
    pilgrim = start(client, "pilgrim", **{"class": "priest"})
    assert deserter["turns_shown"][0]["narration"].startswith("You came down the river")
    assert pilgrim["turns_shown"][0]["narration"].startswith("Candles gutter")
    d, p = state(client, deserter["id"])["document"], state(client, pilgrim["id"])["document"]
    assert list(d["threads"]) == ["find_the_ledger"] and list(p["threads"]) == ["deliver_writ"]
    assert d["scene"]["location"] == "quay" and p["scene"]["location"] == "chapel"
    assert (
        d["entities"]["coin"]["attributes"]["quantity"] == 3
        and p["entities"]["coin"]["attributes"]["quantity"] == 12
    )
    assert (
        d["possessions"]["worn_shortsword"] == "player"
        and "worn_shortsword" not in p["possessions"]
    )
    assert d["entities"]["player"]["attributes"]["class"] == "Sellsword"
    assert p["entities"]["player"]["attributes"]["class"] == "Priest"
    assert {k: v["value"] for k, v in d["stats"]["player"].items() if k != "luck"} == {
        "might": 4,
        "wits": 2,
        "grace": 3,
    }
    world_facts = [f["object"] for f in d["facts"] if not f["subject"]]
    assert "the eastern bridge out of Fenmouth is washed out" in world_facts  # a world-level fact
    assert "the player deserted the Iron Kettle mercenary company" in world_facts  # the origin's
    assert (
        d["stats"]["npcs"]["brannoc"]["approval"]["value"] == 40
        and p["stats"]["npcs"]["brannoc"]["approval"]["value"] == 5
    )


@pytest.mark.parametrize(
    ("origin", "character", "wanted"),
    [
        (
            "pilgrim",
            {"class": "sellsword"},
            "class: 'sellsword' is not open to this origin; choose one of: priest",
        ),
        ("deserter", {"stats": {"might": 5, "wits": 5}}, "stats: 8 points spent; you have 6"),
        ("deserter", {"stats": {"might": 9}}, "stats.might: must be between 1 and 5"),
        ("deserter", {"stats": {"luck": 20}}, "stats.luck: not a stat you make here"),
    ],
)
def test_character_creation_stays_within_the_origin(
    client: TestClient, origin, character, wanted
) -> None:
    before = len(client.get("/api/adventures").json())
    response = client.post(
        "/api/adventures",
        json={"scenario_id": FENMOUTH, "origin_id": origin, "character": character},
    )
    assert response.status_code == 422 and wanted in response.json()["detail"], response.text
    assert len(client.get("/api/adventures").json()) == before  # nothing was started


def test_luck_is_rolled_with_the_origins_modifier_and_the_model_sees_only_its_word(
    client: TestClient, tk, scripted: ScriptedProvider
) -> None:
    words, prompts, lucks = {}, {}, {}
    # seed 4: five rolls averaging 10; seed 92: averaging 17
    for key, origin, seed in (
        ("deserter", "deserter", 4),
        ("pilgrim", "pilgrim", 4),
        ("lucky", "deserter", 92),
    ):
        with tk.db.session() as session:
            adventure = adventure_service.start_adventure(
                session,
                FENMOUTH,
                origin_id=origin,
                character={"name": "Aldric"},
                rng=random.Random(seed),
            )
            adventure_id = adventure.id
        lucks[key] = state(client, adventure_id)["document"]["stats"]["player"]["luck"]["value"]
        scripted.queue("The fog thickens.")
        turn(client, adventure_id, "do", "look around")
        prompts[key] = prompt_of(scripted.requests[-1])
        words[key] = re.search(r"\bluck: ([^;\n]+)", prompts[key]).group(1)
        log = client.get(f"/api/adventures/{adventure_id}/canon-log").json()
        assert log["player"]["luck_descriptor"] == words[key]
    # the same dice, shifted by -4 and +4: the deserter is cursed, the pilgrim blessed
    assert words == {
        "deserter": "Fortune spits on you",
        "pilgrim": "Fortune smiles on you",
        "lucky": "Fortune shrugs at you",
    }
    # Two deserters whose luck differs (6 and 13): their prompts differ only in the band
    # word, so the number is nowhere in them.
    assert lucks["deserter"] != lucks["lucky"]

    def masked(prompt: str) -> str:
        return re.sub(r"\bluck: [^;\n]+", "luck: ~", prompt)

    assert masked(prompts["deserter"]) == masked(prompts["lucky"])


def test_an_npcs_secret_enters_only_their_own_call(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    adventure = start(client, "deserter", **{"class": "assassin"})
    aid = adventure["id"]
    scripted.queue("Gulls wheel over the quay.")
    turn(client, aid, "do", "look at the bounty notice")
    trust_up = (
        '"Stolen," Oda says, and then, quieter: "Help the boatmen and we\'ll talk."\n```state\n'
        + json.dumps({"events": [{"type": "change_stat", "stat": "npc.oda_fenn.trust", "by": 9}]})
        + "\n```"
    )
    scripted.queue(trust_up)
    done = turn(client, aid, "talk", "what happened to the ledger?", to="Oda Fenn")
    npc_prompt = prompt_of(scripted.requests[-1])
    assert SECRET in npc_prompt and "Reply as Oda Fenn only" in npc_prompt  # the NPC's own call
    assert BRANNOC_SECRET not in npc_prompt  # another character's knowledge stays out
    # its proposals are validated like any other: +9 is clamped to the +2 a turn
    trust = next(c for c in done["changes"] if c["target"] == "npc.oda_fenn.trust")
    assert (trust["status"], trust["after"]) == ("limited", 2)
    scripted.queue('"Boss," Brannoc mutters. "She\'s lying."')
    turn(
        client, aid, "do", "ask Oda Fenn about the Iron Kettle"
    )  # addressed in a Do: her call again
    assert SECRET in prompt_of(scripted.requests[-1])
    scripted.queue("The tide turns.")
    turn(client, aid, "do", "walk along the quay")  # the narrator
    narrator_prompt = prompt_of(scripted.requests[-1])
    assert SECRET not in narrator_prompt and "the harbourmaster: grey braid" in narrator_prompt
    # every prompt sent: the secret is in exactly the two calls of Oda's, never elsewhere
    carrying = [i for i, r in enumerate(scripted.requests) if SECRET in prompt_of(r)]
    assert carrying == [1, 2]
    assert all(BRANNOC_SECRET not in prompt_of(r) for r in scripted.requests)
    # Insights shows which role wrote each turn
    turns = client.get(f"/api/adventures/{aid}").json()["turns_shown"]
    roles = [
        client.get(f"/api/adventures/{aid}/turns/{t['id']}/insights").json().get("role")
        for t in turns[1:]
    ]
    assert roles == ["narrator", "npc:oda_fenn", "npc:oda_fenn", "narrator"]


def test_talk_to_someone_without_a_voice_is_refused(client: TestClient) -> None:
    aid = start(client, "deserter", **{"class": "assassin"})["id"]
    response = client.post(
        f"/api/adventures/{aid}/turns", json={"kind": "talk", "text": "hello", "to": "the Pope"}
    )
    assert response.status_code == 422 and "Oda Fenn" in response.text


def test_a_moment_recorded_early_is_used_by_banter_later(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    aid = start(client, "deserter", **{"class": "sellsword"})["id"]
    moment = {
        "events": [
            {
                "type": "record_moment",
                "text": "you slipped on an eel and fell in the river",
                "weight": 8,
            }
        ]
    }
    scripted.queue(
        "You step onto the quay and your boot finds an eel.\n```state\n"
        + json.dumps(moment)
        + "\n```"
    )
    turn(client, aid, "do", "step off the barge")  # turn 1: the moment
    scripted.queue("Fog drifts.")
    turn(client, aid, "do", "wring out your cloak")  # turn 2: no banter (not its turn)
    assert len(scripted.requests) == 2
    scripted.queue("A bell rings from the chapel.")
    scripted.queue('"Mind the eels, boss," Brannoc says.')
    done = turn(client, aid, "do", "listen")  # turn 3: the narrator, then Brannoc's remark
    banter_prompt = prompt_of(scripted.requests[-1])
    assert (
        "you slipped on an eel and fell in the river" in banter_prompt
        and "companion" in banter_prompt
    )
    assert SECRET not in banter_prompt and BRANNOC_SECRET not in banter_prompt
    assert done["turn"]["narration"].endswith('"Mind the eels, boss," Brannoc says.')
    insight = client.get(f"/api/adventures/{aid}/turns/{done['turn']['id']}/insights").json()
    assert [c["role"] for c in insight["calls"]] == ["banter:brannoc"]
    assert "you slipped on an eel" in insight["calls"][0]["prompt"]
    page = client.get(f"/adventures/{aid}/insights?turn={done['turn']['id']}").text
    assert "role: banter:brannoc" in page and "you slipped on an eel" in page
    # heavy moments reach the narrator too
    assert "Not forgotten: you slipped on an eel" in prompt_of(scripted.requests[-2])


def test_code_writes_the_recent_event_line_and_keeps_five(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    aid = start(client, "deserter", **{"class": "sellsword"})["id"]
    for i in range(6):
        scripted.queue(f"Beat {i} happens. More prose follows.")
        turn(client, aid, "do", f"act {i}")
    events = [e["text"] for e in state(client, aid)["document"]["recent_events"]]
    assert events == [f"Beat {i} happens." for i in range(1, 6)]
    log = client.get(f"/api/adventures/{aid}/canon-log").json()
    jsonschema.validate(log, canon_log_schema())
    assert log["recent_events"] == events and log["party"][0]["id"] == "brannoc"
    assert log["player"] == {
        "name": "Aldric",
        "class_id": "sellsword",
        "luck_descriptor": log["player"]["luck_descriptor"],
    }
    assert log["active_quests"][0] == {
        "id": "find_the_ledger",
        "name": "The Missing Ledger",
        "status": "active",
        "objective": "Ask Oda Fenn what happened to the ledger",
    }
    assert SECRET not in json.dumps(log) and BRANNOC_SECRET not in json.dumps(log)


def test_a_broken_origin_is_refused_before_play_naming_it(client: TestClient) -> None:
    data = client.get(f"/api/scenarios/{FENMOUTH}").json()["data"]
    data = {**data, "id": "broken-fenmouth"}
    data["origins"][1]["quests"] = ["deliver_writ", "find_the_ledgr"]
    data["origins"][0]["build"] = {"classes": ["necromancer"]}
    response = client.post("/api/scenarios", json=data)
    assert response.status_code == 422, response.text
    detail = json.dumps(response.json())
    assert "origins[1].quests[1]: unknown quest 'find_the_ledgr'" in detail
    assert "origins[0].build.classes[0]: unknown class 'necromancer'" in detail


@pytest.mark.parametrize("name", ["scenario", "origin", "canon-log", "rules"])
def test_schemas_are_published(client: TestClient, name: str) -> None:
    schema = client.get(f"/api/schemas/{name}").json()
    jsonschema.Draft202012Validator.check_schema(schema)


def test_every_builtin_scenario_fits_the_published_schema(client: TestClient) -> None:
    from talekeeper.state.schema import scenario_schema, schema_errors

    for summary in client.get("/api/scenarios").json():
        data = client.get(f"/api/scenarios/{summary['id']}").json()["data"]
        assert schema_errors(scenario_schema(), data) == [], summary["id"]


def test_the_terminal_chooses_an_origin_makes_a_character_and_talks(
    tk, scripted: ScriptedProvider, monkeypatch
) -> None:
    from rich.console import Console

    from talekeeper.terminal import loop as terminal

    console = Console(record=True, width=140, color_system=None)
    typed = iter(["2", "Mira", "1", "3", "3", "3", "talk Brannoc: are you with me?", "/quit"])
    monkeypatch.setattr(console, "input", lambda prompt="", **kw: next(typed))
    monkeypatch.setattr(terminal, "console", console)
    scripted.queue('"Always, priest," Brannoc grunts.')
    terminal.play(tk, scenario_id=FENMOUTH)
    out = console.export_text()
    assert "Candles gutter" in out and '"Always, priest," Brannoc grunts.' in out
    assert BRANNOC_SECRET in prompt_of(scripted.requests[-1])  # Brannoc's own call
    with tk.db.session() as session:
        adventure = adventure_service.list_adventures(session)[0]
        state = adventure_service.tree.head(session, adventure).state
    assert (
        state["entities"]["player"]["name"] == "Mira"
        and state["entities"]["player"]["attributes"]["class"] == "Priest"
    )
    assert {k: v["value"] for k, v in state["stats"]["player"].items() if k != "luck"} == {
        "might": 3,
        "wits": 3,
        "grace": 3,
    }


def test_the_web_start_form_makes_a_character(client: TestClient) -> None:
    page = client.get("/").text
    assert 'name="character_class"' in page and "Sellsword (The Deserter only)" in page
    form = {
        "scenario_id": FENMOUTH,
        "origin_id": "deserter",
        "character": "1",
        "character_name": "Aldric",
        "character_class": "assassin",
        "stat_might": "1",
        "stat_wits": "4",
        "stat_grace": "3",
    }
    response = client.post("/adventures", data=form, follow_redirects=False)
    assert response.status_code == 303, response.text
    aid = int(response.headers["location"].rsplit("/", 1)[1])
    document = state(client, aid)["document"]
    assert document["entities"]["player"]["attributes"]["class"] == "Assassin"
    assert document["stats"]["player"]["wits"]["value"] == 4
    refused = client.post("/adventures", data={**form, "origin_id": "pilgrim"})
    assert refused.status_code == 422 and "choose one of: priest" in refused.text


def test_the_scenario_editor_keeps_npc_knowledge_and_origin_seeds(client: TestClient) -> None:
    """The World and Origins forms do not show knowledge, quests or builds; saving them
    must not drop what the JSON tab holds."""
    copy_id = client.post(f"/api/scenarios/{FENMOUTH}/duplicate").json()["id"]
    data = client.get(f"/api/scenarios/{copy_id}").json()["data"]
    entities = data["rules"]["entities"]
    world_form = {
        f"ent_{f}": [
            str(e.get(f, "")) if f != "aliases" else ", ".join(e.get("aliases", []))
            for e in entities
        ]
        for f in ("id", "name", "type", "aliases", "description", "status", "location")
    }
    world_form["ent_holder"] = [""] * len(entities)
    world_form["scene_present"] = ""
    response = client.post(
        f"/scenarios/{copy_id}/save/world", data=world_form, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    origins = data["origins"]
    origins_form = {
        f"origin_{f}": [o.get(f, "") for o in origins]
        for f in ("id", "title", "description", "opening")
    }
    origins_form["origin_rules"] = [json.dumps(o.get("rules", {})) for o in origins]
    response = client.post(
        f"/scenarios/{copy_id}/save/origins", data=origins_form, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    saved = client.get(f"/api/scenarios/{copy_id}").json()["data"]
    oda = next(e for e in saved["rules"]["entities"] if e["id"] == "oda_fenn")
    assert any(SECRET in k for k in oda["knowledge"]) and oda["moves"]
    assert saved["origins"][0]["quests"] == ["find_the_ledger"] and saved["origins"][1]["build"][
        "classes"
    ] == ["priest"]
