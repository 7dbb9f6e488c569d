"""Chips speak in names and words (`service.chips`), described once for every front.

Every event type through the real validator reads as a player would say it; no chip text
or tooltip carries an id, a stat path, JSON or an event name (a property over arbitrary
proposals); the model's refusals are one muted count under the turn, the player's own are
shown in words; a correction row reads in names, an older one's paths included; and the web
page and the terminal show the same words for the same turn.
"""

from __future__ import annotations

import copy
import html
import json
import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import chips, corrections, state_engine
from talekeeper.service.app import Talekeeper
from talekeeper.service.names import Names
from talekeeper.state import initial_document, load_rules
from talekeeper.state.events import EVENTS
from talekeeper.store.models import Node
from talekeeper.terminal import loop as terminal
from tests.jargon import jargon_in, story_ids
from tests.state.demo_scenario import DEMO_RULES
from tests.state.test_notes import GREYWATER
from tests.state.test_properties import KEYS, STATS
from tests.test_web_pages import visible

RULES = load_rules(copy.deepcopy(GREYWATER))
BEFORE = initial_document(RULES)


def block(*events: dict) -> str:
    return "\n```state\n" + json.dumps({"events": list(events)}) + "\n```"


def settle(*events: dict, before=BEFORE, rules=RULES) -> list[dict]:
    return state_engine.settle_reply("The tide turns." + block(*events), before, rules, 1).outcomes


EVERY_KIND = [
    (
        {"type": "change_stat", "stat": "npc.maren.trust", "by": 5},
        "limited",
        "Maren's trust −2 → 1 (limited)",
    ),
    (
        {"type": "change_stat", "stat": "player.health", "by": 2},
        "unchanged",
        "no change — Health at its limit",
    ),
    ({"type": "change_stat", "stat": "player.luck", "by": 2}, "applied", "Luck rose"),
    ({"type": "set_stat", "stat": "world.storm", "value": 4}, "unchanged", "Storm already 4"),
    (
        {"type": "reach_milestone", "milestone": "got_key"},
        "milestone",
        "✓ Milestone reached: Obtain the brass key",
    ),
    ({"type": "set_flag", "flag": "ferry_hired", "value": True}, "applied", "Ferry hired: on"),
    (
        {"type": "set_location", "entity": "player", "location": "cottage"},
        "applied",
        "Ash is now at Keeper's cottage",
    ),
    (
        {"type": "set_location", "entity": "maren", "location": "lighthouse"},
        "applied",
        "Maren is now at the lighthouse",
    ),
    (
        {"type": "set_possession", "item": "brass_key", "holder": "player"},
        "applied",
        "Ash now holds brass key",
    ),
    ({"type": "clear_possession", "item": "brass_key"}, "applied", "No one holds brass key now"),
    (
        {"type": "set_status", "entity": "tobin", "status": "asleep"},
        "applied",
        "Tobin is now asleep",
    ),
    (
        {"type": "set_attribute", "entity": "maren", "attribute": "sea_mood", "value": "wry"},
        "applied",
        "Maren's sea mood: wry",
    ),
    ({"type": "set_conditions", "entity": "maren", "add": ["soaked"]}, "applied", "Maren: soaked"),
    (
        {"type": "create_entity", "kind": "creature", "name": "A grey gull"},
        "applied",
        "New: A grey gull",
    ),
    (
        {"type": "add_fact", "object": "the causeway floods at high tide"},
        "applied",
        "Now known: the causeway floods at high tide",
    ),
    (
        {"type": "add_relationship", "source": "maren", "kind": "owes", "target": "tobin"},
        "applied",
        "Maren owes Tobin",
    ),
    (
        {"type": "open_thread", "title": "Find the drowned bell"},
        "applied",
        "New thread: Find the drowned bell",
    ),
    (
        {"type": "complete_objective", "thread": "relight", "objective": "key"},
        "applied",
        "Done: Get the brass key from Tobin",
    ),
    (
        {"type": "resolve_thread", "thread": "relight", "outcome": "failed"},
        "applied",
        "Quest failed: Relight the Greywater lantern",
    ),
    (
        {"type": "set_scene", "location": "lighthouse", "present": ["tobin"]},
        "applied",
        "The scene is now the lighthouse; here: Tobin",
    ),
    (
        {"type": "record_moment", "text": "Maren laughed at you", "weight": 10},
        "applied",
        "Remembered: Maren laughed at you",
    ),
    (
        {"type": "note_event", "text": "Tobin was seen rowing at dusk."},
        "note",
        "Tobin was seen rowing at dusk.",
    ),
]


@pytest.mark.parametrize(
    ("event", "kind", "text"),
    EVERY_KIND,
    ids=[e[0]["type"] + str(i) for i, e in enumerate(EVERY_KIND)],
)
def test_every_kind_of_change_reads_in_names(event: dict, kind: str, text: str) -> None:
    (outcome,) = settle(event)
    assert (outcome["chip"]["kind"], outcome["chip"]["text"]) == (kind, text)
    ids = story_ids(BEFORE.to_json(), GREYWATER)
    for said in (outcome["chip"]["text"], outcome["chip"]["detail"]):
        assert jargon_in(said, ids) == [], said


def test_later_changes_of_a_thread_or_fact_name_it_not_its_id() -> None:
    opened = state_engine.document_of(
        state_engine.settle_reply(
            "x"
            + block(
                {"type": "add_fact", "object": "the bell is cracked"},
                {"type": "add_relationship", "source": "maren", "kind": "owes", "target": "tobin"},
            ),
            BEFORE,
            RULES,
            1,
        ).state,
        RULES,
    )
    fact, rel = opened.facts[-1].id, opened.relationships[-1].id
    texts = [
        o["chip"]["text"]
        for o in settle(
            {"type": "withdraw_fact", "fact": fact},
            {"type": "end_relationship", "relationship": rel},
            before=opened,
        )
    ]
    assert texts == ["No longer true: the bell is cracked", "Ended: Maren owes Tobin"]


def test_the_players_own_refusals_read_in_words() -> None:
    outcomes = settle(
        {"type": "change_stat", "stat": "world.night", "by": -1},
        {"type": "record_moment", "text": "x", "weight": 11},
        {"type": "set_flag", "flag": "tower_unlockd", "value": True},
    )
    texts = [o["chip"]["text"] for o in outcomes]
    assert texts[0] == "✗ refused: Night is a counter and never falls (it is 1)"
    assert texts[1].startswith("✗ refused: the weight must be")
    assert texts[2] == "✗ refused: there is no flag 'tower_unlockd'"  # as they typed it
    for text in texts[:2]:
        assert jargon_in(text) == [], text


# A proposal of any shape, from plausible names (the model's own words aside: a note's text
# or a new entity's name is the story's, shown as written).
CLEAN = st.sampled_from(
    ["Gwen", "the ranger", "Gate Guard", "North Road", "rusty key", "Bandit Camp", "Oda", "tired"]
)


@st.composite
def proposal_events(draw):
    kind = draw(st.sampled_from(sorted(EVENTS)))
    event: dict = {"type": kind}
    for field in EVENTS[kind].fields:
        if not (field.required or draw(st.booleans())):
            continue
        if field.name in KEYS:
            event[field.name] = draw(st.sampled_from([k for k in KEYS[field.name] if k != "nope"]))
        elif field.shape == "stat":
            event[field.name] = draw(st.sampled_from([s for s in STATS if "." in s]))
        elif field.shape in ("number", "weight"):
            event[field.name] = draw(st.integers(-20, 20))
        elif field.shape == "bool":
            event[field.name] = draw(st.booleans())
        elif field.shape in ("refs", "labels", "names", "texts"):
            event[field.name] = draw(st.lists(CLEAN, max_size=3))
        elif field.shape == "id":
            continue  # a new id is the model's to choose; ids belong in Insights
        else:
            event[field.name] = draw(CLEAN)
    return event


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(proposal_events(), min_size=1, max_size=5), min_size=1, max_size=4))
def test_no_chip_ever_shows_an_id_a_path_json_or_an_event_name(turns) -> None:
    rules = load_rules(copy.deepcopy(DEMO_RULES))
    document = initial_document(rules)
    for turn, events in enumerate(turns, start=1):
        settled = state_engine.settle_reply(
            "The road is quiet." + block(*events), document, rules, turn
        )
        ids = story_ids(settled.state, DEMO_RULES)
        for outcome in settled.outcomes:
            for said in (outcome["chip"]["text"], outcome["chip"]["detail"]):
                unquoted = re.sub(r"'[^']*'", "''", said)  # what was asked for, quoted back
                assert jargon_in(unquoted, ids) == [], (outcome, said)
        document = state_engine.document_of(settled.state, rules)


def test_the_models_refusals_are_counted_the_players_shown() -> None:
    model = settle(
        {"type": "change_stat", "stat": "world.night", "by": -1},
        {"type": "teleport", "to": "moon"},
        {"type": "set_flag", "flag": "ferry_hired", "value": True},
    )
    shown = chips.turn_chips(model)
    assert [c.text for c in shown.chips] == ["Ferry hired: on"]
    assert shown.refused_line == "2 of the model's changes were not applied"
    assert chips.turn_chips(model[:1]).refused_line == "1 of the model's changes was not applied"
    theirs = [{**c, "by": "player"} for c in model]
    assert len(chips.turn_chips(theirs).chips) == 3 and chips.turn_chips(theirs).refused == 0


def test_a_correction_row_reads_in_names_even_one_stored_with_paths(
    tk: Talekeeper, client: TestClient, adventure_id: int
) -> None:
    corrections.correct(
        tk,
        adventure_id,
        [
            {"type": "set_location", "entity": "player", "location": "cottage"},
            {"type": "change_stat", "stat": "npc.tobin.trust", "by": 2},
        ],
    )
    with tk.db.session() as session:  # as an older release stored its text
        head = session.query(Node).filter_by(action_kind="correction").one()
        assert "player" not in head.action_text and "npc." not in head.action_text
        head.action_text = (
            "You corrected the state: player.location: docks → cottage; npc.tobin.trust: -4 → -2"
        )
    turn = client.get(f"/api/adventures/{adventure_id}").json()["turns_shown"][-1]
    assert (
        turn["action_line"]
        == "(You corrected the story: Ada is now at Keeper's cottage; Tobin's trust −4 → −2; "
        "The scene is now Keeper's cottage; here: Tobin)"
    )
    page = html.unescape(visible(client.get(f"/adventures/{adventure_id}").text))
    assert "✎ You corrected the story:" in page and "Tobin's trust −4 → −2" in page
    assert "player.location" not in page and "npc.tobin" not in page


def test_the_web_and_the_terminal_say_the_same_words(
    tk: Talekeeper,
    client: TestClient,
    adventure_id: int,
    scripted: ScriptedProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted.queue(
        "Maren squints."
        + block(
            {"type": "change_stat", "stat": "npc.maren.trust", "by": 5},
            {"type": "change_stat", "stat": "world.night", "by": -1},
            {"type": "set_location", "entity": "maren", "location": "lighthouse"},
            {"type": "record_moment", "text": "Maren squinted", "weight": 11},
        )
    )
    done = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "wave"}
    ).json()
    page = client.get(f"/adventures/{adventure_id}").text
    text = html.unescape(visible(page))
    for said in ("Maren's trust −2 → 1 (limited)", "Maren is now at the lighthouse"):
        assert said in text
    assert "2 of the model's changes were not applied" in text
    assert 'class="chip chip-rejected"' not in page  # never a red chip under the turn
    assert (
        f'href="/adventures/{adventure_id}/insights?turn={done["turn"]["id"]}">see Insights' in page
    )
    console = Console(record=True, width=200, color_system=None)
    monkeypatch.setattr(terminal, "console", console)
    terminal.show_changes(done["changes"])
    out = console.export_text()
    assert "● Maren's trust −2 → 1 (limited)" in out and "● Maren is now at the lighthouse" in out
    assert "2 of the model's changes were not applied" in out and "refused" not in out
    # Insights keeps each refusal, with the validator's own words and what the model was told
    insights = client.get(f"/adventures/{adventure_id}/insights?turn={done['turn']['id']}").text
    assert "refused: world.night is a counter" in insights and "record_moment.weight" in insights


def test_names_read_paths_and_ids_as_words() -> None:
    names = Names(BEFORE.to_json())
    assert names.stat("player.lamp_oil") == "Lamp oil"
    assert names.stat("npc.maren.trust") == "Maren's trust"
    assert names.stat("npc.old_tobin.trust") == "Old Tobin's trust"
    assert (
        names.mid("lighthouse") == "the lighthouse"
        and names.entity("cottage") == "Keeper's cottage"
    )
