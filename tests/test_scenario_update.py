"""Update an adventure from its scenario (issue 23 item 7): a preview of what changes, the
story's state checked again against the newer rules with every misfit said (never dropped
silently), the chosen parts taken as one step of the story that Undo takes back — the
canon with it — through the service, the API and the pages."""

from __future__ import annotations

import asyncio
import copy
import json
import random
import re

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, scenario_update, scenarios, state_engine, tree_ops
from talekeeper.service.app import Talekeeper
from talekeeper.service.turns import collect_turn
from talekeeper.store.models import Adventure
from talekeeper.story import tree
from tests.test_worlds import prompt_of

DEMO = "greywater-lantern"
TURN = (
    "Maren nods at the ferry.\n```state\n"
    + json.dumps(
        {
            "events": [
                {"type": "set_flag", "flag": "ferry_hired", "value": True},
                {"type": "change_stat", "stat": "npc.maren.trust", "by": 3},
                {"type": "set_status", "entity": "Tobin", "status": "asleep"},
            ]
        }
    )
    + "\n```"
)


def copy_of(tk: Talekeeper, scenario_id: str) -> tuple[str, dict]:
    with tk.db.session() as session:
        row = scenarios.duplicate_scenario(session, scenario_id)
        return row.id, copy.deepcopy(row.data)


def save(tk: Talekeeper, scenario_id: str, data: dict) -> None:
    with tk.db.session() as session:
        scenarios.update_scenario(session, scenario_id, data)


def entity(data: dict, eid: str) -> dict:
    return next(e for e in data["rules"]["entities"] if e["id"] == eid)


def newer(data: dict) -> dict:
    """What an author might change: a typo, a new character, a card, a flag dropped, a
    stat's range tightened, a stat gone, a canon fact gone, a new step of the quest."""
    data = copy.deepcopy(data)
    data["author_note"] = "Every scene should smell of salt."
    entity(data, "maren")["description"] = "The ferrywoman of Greywater, weathered and wry."
    entity(data, "tobin")["description"] = "The grieving old keeper, who trusts nobody."
    data["rules"]["entities"].append(
        {
            "id": "wren",
            "name": "Wren",
            "type": "person",
            "status": "alive",
            "location": "docks",
            "description": "A mudlark girl with sharp eyes.",
        }
    )
    del data["rules"]["flags"]["ferry_hired"]
    trust = data["rules"]["stats"]["npcs"]["maren"]["trust"]
    trust["max"], trust["bands"] = 0, [[-10, -4, "hostile"], [-4, 0, "wary"]]
    for origin in data.get("origins", []):
        for block in ((origin.get("rules") or {}).get("stats") or {}).get("npcs", {}).values():
            for stat in block.values():
                stat["initial"] = min(stat.get("initial", 0), 0)
    del data["rules"]["stats"]["player"]["lamp_oil"]
    data["rules"]["facts"] = [f for f in data["rules"]["facts"] if f.get("object") != "last winter"]
    relight = next(t for t in data["rules"]["threads"] if t["id"] == "relight")
    relight["objectives"].append({"id": "bell", "text": "Ring the drowned bell"})
    data["story_cards"].append(
        {
            "type": "location",
            "name": "Mudflats",
            "entry": "Grey mud to the knee.",
            "triggers": "mud",
        }
    )
    return data


@pytest.fixture
def played(tk: Talekeeper, scripted: ScriptedProvider) -> tuple[int, str, dict]:
    """A copy of the demo, an adventure two turns in, the story having changed Tobin."""
    sid, data = copy_of(tk, DEMO)
    with tk.db.session() as session:
        aid = adventures.start_adventure(session, sid, {"name": "Ada"}).id
    scripted.queue(TURN, "Fog rolls in.")
    asyncio.run(collect_turn(tk, aid, "do", "hire the ferry"))
    asyncio.run(collect_turn(tk, aid, "do", "wait"))
    with tk.db.session() as session:  # the story describes Tobin in its own words
        adventure = session.get(Adventure, aid)
        head = tree.head(session, adventure)
        state = dict(head.state)
        state["entities"] = {**state["entities"]}
        state["entities"]["tobin"] = {**state["entities"]["tobin"], "description": "Drunk."}
        head.state = state
    return aid, sid, data


def canon(tk: Talekeeper, aid: int) -> tuple[dict, dict, object]:
    with tk.db.session() as session:
        adventure = session.get(Adventure, aid)
        rules = state_engine.rules_of(adventure)
        document = state_engine.document_of(tree.head(session, adventure).state, rules)
        return dict(adventure.plot), dict(adventure.rules or {}), document


def test_the_preview_says_what_changes_and_what_no_longer_fits(
    tk: Talekeeper, played: tuple[int, str, dict]
) -> None:
    aid, sid, data = played
    assert scenario_update.preview(tk, aid).up_to_date is True
    save(tk, sid, newer(data))
    before = canon(tk, aid)
    preview = scenario_update.preview(tk, aid)
    assert canon(tk, aid)[:2] == before[:2]  # a preview writes nothing
    parts = {p.key: p for p in preview.parts}
    assert not preview.up_to_date and not parts["narrator_instructions"].changed
    assert parts["author_note"].changes == ["Now reads: “Every scene should smell of salt.”"]
    assert parts["story_cards"].changes == ["New card: Mudflats."]
    rules = parts["rules"].changes
    for said in (
        "Maren's description changed.",
        "New person: Wren.",
        "The rules of Maren's trust changed.",
        "Your lamp oil is no longer a stat.",
        "The switch “Maren has agreed to take you across” is gone.",
        "New step in “Relight the Greywater lantern”: Ring the drowned bell.",
    ):
        assert said in rules, (said, rules)
    findings = preview.findings
    for said in (
        "Wren joins the story (new in the scenario).",
        "Tobin's description was changed by the story; the story's is kept.",
        "Maren's trust was 1, outside its new range; held to 0.",
        "Your lamp oil is no longer a stat in the scenario; removed (it was 2).",
        "The switch “Maren has agreed to take you across” is no longer in the scenario; "
        "removed (it was on).",
        "“The lighthouse has been dark since last winter” is no longer a fact of the scenario; "
        "withdrawn (the story's own facts stay).",
    ):
        assert said in findings, (said, findings)
    words = preview.model_dump_json()
    assert not re.search(r"\b(?:npc|player|world)\.\w|\bferry_hired\b|\blamp_oil\b", words)


def test_taking_the_update_is_one_step_that_undo_takes_back_with_its_canon(
    tk: Talekeeper, scripted: ScriptedProvider, played: tuple[int, str, dict]
) -> None:
    aid, sid, data = played
    save(tk, sid, newer(data))
    old_plot, old_rules, old_doc = canon(tk, aid)
    done = scenario_update.update(tk, aid)
    assert done.took == [
        "Author's note",
        "Story cards",
        "Rules: characters, places, stats, goals and canon",
    ]
    step = done.story.turns_shown[-1]
    assert step.kind == "update" and step.update.findings == done.findings
    assert step.action_line == "(Updated from the scenario “The Lantern of Greywater (copy)”)"
    plot, rules, doc = canon(tk, aid)
    assert plot["author_note"] == "Every scene should smell of salt."
    assert plot["story_cards"][-1]["name"] == "Mudflats"
    assert plot["persona"] == old_plot["persona"] and rules["player"]["name"] == "Ada"
    assert "ferry_hired" not in doc.flags and "lamp_oil" not in doc.stats.player
    assert doc.stats.npcs["maren"]["trust"].value == 0
    assert doc.entities["maren"].description == "The ferrywoman of Greywater, weathered and wry."
    assert (
        doc.entities["tobin"].description == "Drunk." and doc.entities["tobin"].status == "asleep"
    )
    assert doc.entities["wren"].name == "Wren"
    assert [o.id for o in doc.threads["relight"].objectives][-1] == "bell"
    # the next turn plays by the newer canon: its notes, its stat guide, its validator
    scripted.queue(
        "Wren waves from the mud.\n```state\n"
        + json.dumps({"events": [{"type": "set_flag", "flag": "ferry_hired", "value": False}]})
        + "\n```"
    )
    turn = asyncio.run(collect_turn(tk, aid, "do", "walk onto the mud"))
    sent = prompt_of(scripted.requests[-1])
    assert "weathered and wry" in sent and "Grey mud to the knee." in sent
    assert "smell of salt" in sent and "lamp oil" not in sent.lower()
    assert [c.status for c in turn.changes] == ["rejected"]
    # Undo the turn, then the update: the canon and the state are as before it
    tree_ops.undo(tk, aid)
    with tk.db.session() as session:  # the player edits the note under the newer canon
        adventure = session.get(Adventure, aid)
        adventure.plot = {**adventure.plot, "author_note": "Salt and tar."}
    tree_ops.undo(tk, aid)
    assert canon(tk, aid)[:2] == (old_plot, old_rules)
    assert canon(tk, aid)[2] == old_doc
    tree_ops.redo(tk, aid)
    plot, rules, doc = canon(tk, aid)
    assert plot["author_note"] == "Salt and tar."  # the newer canon as it was left
    assert "ferry_hired" not in (rules.get("flags") or {}) and "wren" in doc.entities
    # only the player's own edit now differs from the scenario; with it taken, nothing does
    left = [p.key for p in scenario_update.preview(tk, aid).parts if p.changed]
    assert left == ["author_note"]
    scenario_update.update(tk, aid, ["author_note"])
    with pytest.raises(scenario_update.NothingToUpdate):
        scenario_update.update(tk, aid)


def test_only_the_parts_chosen_are_taken(tk: Talekeeper, played: tuple[int, str, dict]) -> None:
    aid, sid, data = played
    save(tk, sid, newer(data))
    _, old_rules, old_doc = canon(tk, aid)
    done = scenario_update.update(tk, aid, ["author_note"])
    assert done.took == ["Author's note"] and done.findings == []
    plot, rules, doc = canon(tk, aid)
    assert plot["author_note"] == "Every scene should smell of salt."
    assert rules == old_rules and doc.flags == old_doc.flags
    left = {p.key for p in scenario_update.preview(tk, aid).parts if p.changed}
    assert left == {"story_cards", "rules"}
    with pytest.raises(scenario_update.ScenarioUpdateInvalid):
        scenario_update.update(tk, aid, ["everything"])


def test_the_character_made_at_the_start_is_kept(
    tk: Talekeeper, scripted: ScriptedProvider
) -> None:
    sid, data = copy_of(tk, "fenmouth-ledger")
    with tk.db.session() as session:
        aid = adventures.start_adventure(
            session,
            sid,
            origin_id="pilgrim",
            character={"name": "Ines", "class": "priest", "stats": {"might": 3, "wits": 4}},
            rng=random.Random(3),
        ).id
    _, before, _ = canon(tk, aid)
    changed = copy.deepcopy(data)
    entity(changed, "brannoc")["description"] = "A sellsword who hums off-key."
    save(tk, sid, changed)
    scenario_update.update(tk, aid)
    _, after, doc = canon(tk, aid)
    assert after["player"] == before["player"]  # name and class
    for stat in ("might", "wits", "grace", "luck"):  # made and rolled once, never again
        assert (
            after["stats"]["player"][stat]["initial"] == before["stats"]["player"][stat]["initial"]
        )
    assert after["scene"]["location"] == "chapel"  # the pilgrim's origin, not the first
    assert doc.entities["brannoc"].description == "A sellsword who hums off-key."


def test_a_scenario_that_is_gone_has_nothing_to_update_from(
    client: TestClient, tk: Talekeeper, played: tuple[int, str, dict]
) -> None:
    aid, sid, _ = played
    with tk.db.session() as session:
        scenarios.delete_scenario(session, sid)
    response = client.get(f"/api/adventures/{aid}/scenario-update")
    assert response.status_code == 404 and "no longer in your library" in response.text


def test_the_api_and_the_pages(
    client: TestClient, tk: Talekeeper, played: tuple[int, str, dict]
) -> None:
    aid, sid, data = played
    assert client.get(f"/api/adventures/{aid}/scenario-update").json()["up_to_date"] is True
    assert client.post(f"/api/adventures/{aid}/scenario-update", json={}).status_code == 409
    save(tk, sid, newer(data))
    preview = client.get(f"/api/adventures/{aid}/scenario-update").json()
    assert preview["up_to_date"] is False and len(preview["parts"]) == 6
    bad = client.post(f"/api/adventures/{aid}/scenario-update", json={"take": ["nope"]})
    assert bad.status_code == 422 and "choose from" in bad.text
    assert "Update from the scenario…" in client.get(f"/adventures/{aid}/plot").text
    page = client.get(f"/adventures/{aid}/scenario-update").text
    assert 'name="take" value="rules" checked' in page and "Wren joins the story" in page
    taken = client.post(
        f"/adventures/{aid}/scenario-update/take",
        data={"take": ["story_cards"]},
        follow_redirects=False,
    )
    assert taken.status_code in (302, 303)
    story = client.get(f"/adventures/{aid}").text
    assert "You updated the story from its scenario" in story and "Story cards" in story
    answer = client.post(f"/api/adventures/{aid}/scenario-update", json={"take": ["rules"]})
    assert answer.status_code == 200, answer.text
    assert "Wren joins the story (new in the scenario)." in answer.json()["findings"]
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    assert "wren" not in client.get(f"/api/adventures/{aid}/state").json()["document"]["entities"]


def test_an_update_step_keeps_its_canon_through_export_and_import(
    tk: Talekeeper, played: tuple[int, str, dict]
) -> None:
    """A bundle carries the canons an adventure has had, so Undo past an imported update
    step still brings the older canon back."""
    from tests.interop_helpers import export_bytes, import_bytes

    aid, sid, data = played
    before_plot, before_rules, _ = canon(tk, aid)
    save(tk, sid, newer(data))
    scenario_update.update(tk, aid)
    copy_id = import_bytes(tk, export_bytes(tk, aid)).adventure_id
    plot, _, doc = canon(tk, copy_id)
    assert plot["author_note"] == "Every scene should smell of salt." and "wren" in doc.entities
    tree_ops.undo(tk, copy_id)
    plot, rules, doc = canon(tk, copy_id)
    assert plot["author_note"] == before_plot["author_note"] and rules == before_rules
    assert "wren" not in doc.entities
