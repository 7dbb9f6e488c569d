"""The canon in words reaches every role, and no prompt a model only reads holds an id, a
stat path or JSON (issue 23 item 1).

A scripted session of each scenario is played in each state mode — proposals applied and
refused, a moment, an NPC in dialogue, a companion's remark, a player's correction — and
then every prompt Insights stored for it is walked, with the dry run of the next turn: the
only text allowed to name ids is the state pass's own (inline mode's vocabulary and emit
reminder; the structured pass's question is its own request, never stored as a prompt a
model reads to write the story)."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.base import GenerationRequest
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.state import load_rules, state_notes
from talekeeper.state.document import Entity, Fact, Moment
from talekeeper.state.initial import initial_document
from talekeeper.state.notes import stat_guide_words
from tests.test_worlds import FENMOUTH, prompt_of

DEMO = "greywater-lantern"
STATE_PASS_SECTIONS = {"event_vocabulary", "emit_reminder"}  # inline mode's own protocol
JSON = re.compile(r"\{\s*\"|\"type\"|```|\"events\"")
PATH = re.compile(r"\b(?:world|player|npc)\.[a-z_]")
REF = re.compile(r"\b[frtm]\d+:")


def id_pattern(rules: dict) -> re.Pattern[str]:
    """Every id the scenario's rules declare, as it would show if copied: ids with an
    underscore anywhere, one-word ids only as a tag — `(maren)`, `(quay, place)` (a bare
    "quay" is also a word of the story)."""
    ids = {e["id"] for e in rules.get("entities", [])} | set(rules.get("items", {}))
    ids |= set(rules.get("milestones", {})) | set(rules.get("flags", {}))
    ids |= set(rules.get("quests", {})) | {t["id"] for t in rules.get("threads", [])}
    for quest in [*rules.get("quests", {}).values(), *rules.get("threads", [])]:
        ids |= {o["id"] for o in quest.get("objectives", [])}
    snake = sorted(i for i in ids if "_" in i)
    tags = sorted(i for i in ids if "_" not in i)
    return re.compile(
        "|".join([*(rf"\b{re.escape(i)}\b" for i in snake), rf"\((?:{'|'.join(tags)})[,)]"])
    )


def protocol_in(text: str, ids: re.Pattern[str]) -> list[str]:
    return [m.group(0) for p in (JSON, PATH, REF, ids) for m in p.finditer(text)]


def reply_for(mode: str, turn: list[int]):
    """The scripted model: narration (with a state block in inline mode), the structured
    pass's JSON, a companion's remark. Turn 1 records a heavy moment and proposes one
    change the rules refuse; the rest change a stat."""

    def reply(request: GenerationRequest) -> str:
        text = prompt_of(request)
        if request.json_schema is not None:
            return json.dumps({"events": events(turn[0])})
        if "travelling companion" in text:
            return '"Careful on those planks," he mutters, grinning.'
        turn[0] += 1
        prose = "Rain drums on the planks. Somewhere a bell rings twice."
        if mode == "inline":
            prose += "\n```state\n" + json.dumps({"events": events(turn[0])}) + "\n```"
        return prose

    return reply


def events(turn: int) -> list[dict]:
    if turn == 1:
        return [
            {"type": "record_moment", "text": "you slipped and fell in the river", "weight": 9},
            {"type": "set_location", "entity": "Gwendolyn", "location": "nowhere"},
        ]
    return [{"type": "note_event", "text": f"The rain kept on (turn {turn})."}]


def play(client: TestClient, aid: int, kind: str, text: str, **extra) -> dict:
    response = client.post(
        f"/api/adventures/{aid}/turns", json={"kind": kind, "text": text, **extra}
    )
    assert response.status_code == 200, response.text
    return response.json()


def stored_prompts(client: TestClient, aid: int) -> list[tuple[str, str]]:
    """(where, text) for every prompt a model read in this adventure, as Insights stored
    it — each section but the state pass's own, each extra call's prompt — and the dry run."""
    found = []
    turns = client.get(f"/api/adventures/{aid}").json()["turns_shown"]
    records = [
        client.get(f"/api/adventures/{aid}/turns/{t['id']}/insights").json()
        for t in turns
        if t["depth"] > 0 and t["kind"] != "correction"
    ]
    records.append(client.get(f"/api/adventures/{aid}/insights/next?kind=do&text=wait").json())
    for n, record in enumerate(records):
        allowed = [s["text"] for s in record["sections"] if s["name"] in STATE_PASS_SECTIONS]
        for section in record["sections"]:
            if section["name"] not in STATE_PASS_SECTIONS:
                found.append((f"record {n}, section {section['name']}", section["text"]))
        prompt = record["prompt"]
        sent = prompt["text"] or "\n".join(m["content"] for m in prompt["messages"])
        for text in allowed:  # the whole prompt as sent, less the state pass's own text
            sent = sent.replace(text, "")
        found.append((f"record {n}, as sent", sent))
        found += [(f"record {n}, call {c['role']}", c["prompt"]) for c in record.get("calls") or []]
    return found


@pytest.mark.parametrize("mode", ["inline", "structured", "off"])
@pytest.mark.parametrize("scenario", [DEMO, FENMOUTH])
def test_no_prompt_a_model_only_reads_holds_an_id_a_path_or_json(
    client: TestClient, scripted: ScriptedProvider, mode: str, scenario: str
) -> None:
    assert client.put(
        "/api/settings", json={"generation": {"state_updates": mode}}
    ).status_code in (200, 204)
    body = {"scenario_id": scenario, "answers": {"name": "Ada"}}
    if scenario == FENMOUTH:
        body = {
            "scenario_id": scenario,
            "origin_id": "deserter",
            "character": {"name": "Ada", "class": "sellsword"},
        }
    created = client.post("/api/adventures", json=body)
    assert created.status_code == 201, created.text
    aid = created.json()["id"]
    rules = client.get(f"/api/scenarios/{scenario}").json()["data"]["rules"]
    scripted._reply_fn = reply_for(mode, [0])  # noqa: SLF001 - the scripted model's script
    scripted._replies = None  # noqa: SLF001
    who = "Oda Fenn" if scenario == FENMOUTH else "Maren"
    play(client, aid, "do", "look around")
    if scenario == FENMOUTH:
        play(client, aid, "talk", "what do you know?", to=who)  # the NPC's own call
    else:
        play(client, aid, "do", f"ask {who} what she knows")
    play(client, aid, "do", "wait for the rain to ease")  # turn 3: a companion's remark is due
    correction = client.post(
        f"/api/adventures/{aid}/state/corrections",
        json={"events": [{"type": "set_status", "entity": who, "status": "soaked"}]},
    )
    assert correction.status_code == 200, correction.text
    play(client, aid, "say", "Let's go.")
    play(client, aid, "do", "follow the bells")  # turn 6: the companion again
    ids = id_pattern(rules)
    prompts = stored_prompts(client, aid)
    assert len(prompts) >= 10
    leaks = {where: protocol_in(text, ids) for where, text in prompts}
    assert {where: found for where, found in leaks.items() if found} == {}
    if scenario == FENMOUTH and mode != "off":  # (off: no moment is recorded to raise)
        calls = [where for where, _ in prompts if "call banter" in where]
        assert calls, "the companion spoke"


def test_the_state_pass_and_inline_protocol_still_name_the_ids(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    """The other side: only where a model must write ids does it get them."""
    client.put("/api/settings", json={"generation": {"state_updates": "structured"}})
    scripted.queue("The ferry creaks.", '{"events": []}')
    play(client, adventure_id, "do", "listen")
    state_pass = next(r for r in scripted.requests if r.json_schema is not None)
    assert "npc.maren.trust" in prompt_of(state_pass) and "(maren" in prompt_of(state_pass)
    client.put("/api/settings", json={"generation": {"state_updates": "inline"}})
    record = client.get(f"/api/adventures/{adventure_id}/insights/next?kind=do&text=x").json()
    vocabulary = next(s["text"] for s in record["sections"] if s["name"] == "event_vocabulary")
    assert "npc.maren.trust" in vocabulary and "relight" in vocabulary


def test_a_fenmouth_session_shows_the_canon_in_words_in_insights(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    """Issue 23's "done when": in structured mode, Insights shows the stat guide in words,
    a moment and Brannoc's description reaching the narrator, and no path in the
    companion's prompt."""
    client.put("/api/settings", json={"generation": {"state_updates": "structured"}})
    body = {"scenario_id": FENMOUTH, "origin_id": "deserter", "character": {"name": "Ada"}}
    aid = client.post("/api/adventures", json=body).json()["id"]
    scripted._reply_fn = reply_for("structured", [0])  # noqa: SLF001
    scripted._replies = None  # noqa: SLF001
    for action in ("look around", "wring out your cloak", "listen to the bells"):
        done = play(client, aid, "do", action)
    record = client.get(f"/api/adventures/{aid}/turns/{done['turn']['id']}/insights").json()
    sections = {s["name"]: s["text"] for s in record["sections"]}
    guide = sections["stat_guide"]
    assert "Brannoc's approval (what Brannoc thinks of you): disgusted" in guide
    assert "Your luck (Fortune's opinion of you): from low to high, Fortune spits on you" in guide
    notes = sections["current_state"]
    assert "Not forgotten: you slipped and fell in the river." in notes
    assert "Brannoc, alive — a sellsword in a patched brigandine who travels with you" in notes
    assert "You carry coin (3), worn shortsword." in notes
    assert "Known: The eastern bridge out of Fenmouth is washed out;" in notes
    assert "You deserted the Iron Kettle mercenary company" in notes
    (call,) = record["calls"]
    assert call["role"] == "banter:brannoc"
    assert PATH.findall(call["prompt"]) == [] and "approval: loyal" in call["prompt"]
    page = client.get(f"/adventures/{aid}/insights?turn={done['turn']['id']}").text
    assert "What the stats mean" in page and "Not forgotten" in page


def test_the_notes_say_each_part_of_the_canon_in_words() -> None:
    """The renderer alone: quantities, descriptions of those in scene (only them), world
    facts as sentences, moments only above the narrator's weight."""
    rules = load_rules(
        {
            "entities": [
                {"id": "dock", "name": "the dock", "type": "place"},
                {"id": "ines", "name": "Ines", "type": "person", "description": "A tall diver."},
                {"id": "olaf", "name": "Olaf", "type": "person", "description": "A cook."},
            ],
            "scene": {"location": "dock", "present": ["ines"]},
            "stats": {
                "npcs": {
                    "ines": {
                        "mood": {
                            "min": 0,
                            "max": 4,
                            "hidden": True,
                            "bands": [[0, 2, "sour"], [2, 4, "sunny"]],
                        }
                    }
                }
            },
        }
    )
    doc = initial_document(rules)
    doc.entities["pearl"] = Entity(
        id="pearl", name="pearl", type="item", attributes={"quantity": 4}
    )
    doc.possessions["pearl"] = "player"
    doc.facts.append(Fact(id="f9", object="the tide is out.", authority="canon"))
    doc.moments += [
        Moment(id="m1", text="you dropped the anchor on your foot", weight=7, turn=1),
        Moment(id="m2", text="you sneezed", weight=6, turn=1),
    ]
    notes = state_notes(doc, rules, None, turn=2)
    assert "You carry pearl (4)." in notes
    assert "Ines — a tall diver" in notes and "a cook" not in notes
    assert "Known: The tide is out." in notes and "Someone" not in notes
    assert "Not forgotten: you dropped the anchor on your foot." in notes
    assert "sneezed" not in notes  # below the narrator's threshold
    guide = stat_guide_words(rules)
    assert guide == "What the stats mean:\n- Ines's mood: from low to high, sour, sunny."


def test_the_inline_protocol_is_at_most_15_percent_of_a_played_storys_prompt(
    client: TestClient, tk, scripted: ScriptedProvider
) -> None:
    """Issue 23 item 4, as `benchmarks/prompt_sections.py --model echo --window 8192 --turns
    20 --mode inline` measures it: after 20 turns at an 8k budget the vocabulary and the
    reminder are at most 15% of the next prompt, and the history is its largest section."""
    from talekeeper.context.settings import update_context_settings

    with tk.db.session() as session:
        update_context_settings(session, {"memory_enabled": False})
    generation = {"state_updates": "inline", "context_budget": 8192}
    client.put("/api/settings", json={"generation": generation})
    aid = client.post(
        "/api/adventures", json={"scenario_id": DEMO, "answers": {"name": "Ada"}}
    ).json()["id"]
    story = (
        "Rain lashes the harbour wall, and the ferry strains at its ropes like a dog on a "
        "leash. Maren squints past you at the black headland, where the lighthouse stands "
        "unlit. Somewhere out on the causeway a bell tolls once, then again, slower than "
        "before. Your lamp gutters in the wind; the wick will need trimming tonight."
    )
    for n in range(20):
        note = json.dumps({"events": [{"type": "note_event", "text": f"The bell rang ({n})."}]})
        scripted.queue(f"{story}\n```state\n{note}\n```")
        play(client, aid, "do", f"listen to the bell ({n})")
    record = client.get(f"/api/adventures/{aid}/insights/next?kind=do&text=wait").json()
    tokens = {s["name"]: s["tokens"] for s in record["sections"]}
    protocol = tokens["event_vocabulary"] + tokens["emit_reminder"]
    assert protocol / record["total_tokens"] <= 0.15, (protocol, record["total_tokens"])
    assert max(tokens, key=tokens.__getitem__) == "history", tokens
