"""Honest chips: a note that restates the narration or writes ids makes no chip; a note is
shown as a note, never as a change; recent events carry no ids; an edited narration's
changes are read from the edited text, and its chips are its own."""

from __future__ import annotations

import copy
import json

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import state_engine
from talekeeper.service.chips import turn_chips
from talekeeper.state import initial_document, load_rules
from talekeeper.state.canon import record_event
from tests.state.test_notes import GREYWATER, protocol_in
from tests.test_tree_api import play

RULES = load_rules(copy.deepcopy(GREYWATER))
BEFORE = initial_document(RULES)
PROSE = "Maren unties the ferry and pushes off into the black water, muttering about the storm."


def block(*events: dict) -> str:
    return "\n```state\n" + json.dumps({"events": list(events)}) + "\n```"


def note(text: str) -> dict:
    return {"type": "note_event", "text": text}


def test_a_note_that_restates_the_narration_makes_no_chip() -> None:
    settled = state_engine.settle_reply(
        PROSE
        + block(
            note("Maren pushes the ferry off into the black water."),
            {"type": "set_flag", "flag": "ferry_hired", "value": True},
        ),
        BEFORE,
        RULES,
        1,
    )
    assert [c["type"] for c in settled.outcomes] == ["set_flag"]
    assert settled.proposal["dropped"][0]["why"] == "it only restated the narration"


def test_a_note_that_copies_the_recent_events_line_is_dropped() -> None:
    """SmolLM2 copies the prompt's "Recently: a / b / c" into its note: a stale scene
    told back to the narrator as news. Seen in play with the embedded model."""
    before = record_event(BEFORE, "You walk across the headland and to your home.", 1)
    before = record_event(before, "Maren's trust: warming (4 of 10)", 2)
    copied = (  # its first line has left the recent events; the others are there
        "The scene is now the lighthouse / You walk across the headland and to your home."
        " / Maren's trust: warming (4 of 10)"
    )
    for text in (copied, "Maren's trust: warming (4 of 10)"):
        settled = state_engine.settle_reply(PROSE + block(note(text)), before, RULES, 3)
        assert settled.outcomes == [], text
        assert settled.proposal["dropped"][0]["why"] == "it is already in the recent events"
    # a new line is kept, with or without a slash in it
    for text in ("The tide turns against the ferry / or so Maren says.", "Tobin bars his door."):
        settled = state_engine.settle_reply(PROSE + block(note(text)), before, RULES, 3)
        assert [c["type"] for c in settled.outcomes] == ["note_event"], text


def test_a_note_that_writes_ids_or_paths_is_dropped() -> None:
    for text in ("Maren (maren) — alive", "player.health 10/5", 'Maren said {"type": "x"}'):
        settled = state_engine.settle_reply(PROSE + block(note(text)), BEFORE, RULES, 1)
        assert settled.outcomes == [], text
        assert (
            settled.proposal["dropped"][0]["why"]
            == "it wrote ids, stat paths or a stat readout, not story"
        )
        recent = state_engine.document_of(settled.state, RULES).recent_events
        assert not protocol_in(" ".join(e.text for e in recent), RULES), recent


def test_a_new_note_is_shown_as_a_note_not_a_change() -> None:
    settled = state_engine.settle_reply(
        PROSE
        + block(
            note("Tobin was seen rowing toward the lighthouse at dusk."),
            {"type": "set_flag", "flag": "ferry_hired", "value": True},
        ),
        BEFORE,
        RULES,
        1,
    )
    kinds = [c["chip"]["kind"] for c in settled.outcomes]
    assert kinds == ["note", "applied"]
    shown = turn_chips(settled.outcomes)
    assert [c.text for c in shown.notes] == ["Tobin was seen rowing toward the lighthouse at dusk."]
    assert [c.text for c in shown.chips] == ["Ferry hired: on"]


events = st.sampled_from(
    [
        {"type": "create_entity", "id": "gull", "kind": "creature", "name": "A grey gull"},
        {
            "type": "open_thread",
            "title": "Find the drowned bell",
            "objectives": ["Dive at low tide"],
        },
        {"type": "add_fact", "text": "The causeway floods at high tide."},
        {"type": "set_status", "entity": "maren", "status": "injured"},
        {"type": "set_flag", "flag": "ferry_hired", "value": True},
        {"type": "change_stat", "path": "world.storm", "delta": 2},
        {"type": "change_stat", "path": "npc.maren.trust", "delta": 1},
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(events, min_size=1, max_size=3), min_size=1, max_size=6))
def test_recent_events_carry_no_ids_or_paths(turns) -> None:
    """What code writes to the recent events (read back by the narrator) is in words."""
    document = BEFORE
    for turn, proposal in enumerate(turns, start=1):
        settled = state_engine.settle_reply(
            "The tide turns." + block(*proposal), document, RULES, turn
        )
        document = state_engine.document_of(settled.state, RULES)
    text = " ".join(e.text for e in document.recent_events)
    assert not protocol_in(text, RULES, generic=False), text
    assert "(" not in text and not any(f" {p}" in text for p in ("t1", "f1", "f2", "r1")), text


def test_an_edited_narration_reads_its_changes_from_the_edited_text(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    reply = "Maren agrees to take you." + block(
        note("Tobin was seen rowing toward the lighthouse."),
        {"type": "set_flag", "flag": "ferry_hired", "value": True},
    )
    one = play(client, adventure_id, scripted, reply, "ask Maren")["turn"]
    url = f"/api/adventures/{adventure_id}/turns/{one['id']}/edit"
    # the edited text tells a move: that is its change, read from it; the old take's flag
    # (no words tell it) is kept, checked again, and its note (it told the old text) is not
    shown = client.post(
        url, json={"narration": "Maren rows you across to the lighthouse, cursing the tide."}
    ).json()["turns_shown"][-1]
    chips = [c for c in shown["changes"] if c["status"] != "note"]
    assert {c["type"] for c in chips} == {"set_location", "set_scene", "set_flag"}
    read = [c for c in chips if c["type"] != "set_flag"]
    assert all(c["by"] == "narration" for c in read)
    assert all("Read from the narration" in c["chip"]["detail"] for c in read)
    (kept,) = [c for c in chips if c["type"] == "set_flag"]
    assert kept["chip"]["detail"] == state_engine.KEPT_FROM
    assert [c["type"] for c in shown["changes"] if c["status"] == "note"] == ["kept_changes"]
    state = client.get(f"/api/adventures/{adventure_id}/state").json()
    assert state["document"]["entities"]["player"]["location"] == "lighthouse"
    assert state["document"]["flags"]["ferry_hired"] is True
    # the page shows the same chips under the take it shows
    page = client.get(f"/adventures/{adventure_id}").text
    article = page[page.index(f'id="turn-{shown["id"]}"') :]
    article = article[: article.index("</article>")]
    assert article.count('class="chip chip-applied"') == len(chips)
    assert state_engine.KEPT_FROM in article
    # an edit that tells nothing keeps only what no words tell
    shown = client.post(url, json={"narration": "Maren nods, once."}).json()["turns_shown"][-1]
    assert [c["type"] for c in shown["changes"]] == ["set_flag", "kept_changes"]
    # an edit with its own state block: the block's changes, and what the text tells
    block_off = block({"type": "set_flag", "flag": "ferry_hired", "value": False})
    shown = client.post(url, json={"narration": "Maren refuses." + block_off}).json()[
        "turns_shown"
    ][-1]
    assert [c["type"] for c in shown["changes"]] == ["set_flag"]
