"""A death, a sleep or a faint told in the narration against one the model proposes.

The narration's words decide: a state said outright ("Tobin is dead", "Maren lies dead on
the docks") is a change read from it; a garbled fragment ("Maren, dead.") or a figure of
speech ("dead tired") is silence; a model's status the narration contradicts — it has the
person speak, handle things or go somewhere and never tells the status, or it tells
another one — is refused, with the reason in words, and what the narration tells stands.
"""

from __future__ import annotations

import html
import json

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import state_engine
from talekeeper.state import apply_proposal
from talekeeper.state.telling import heard
from tests.state.test_reader_shapes import read, state


def block(*events: dict) -> str:
    return "\n```state\n" + json.dumps({"events": list(events)}) + "\n```"


def dies(who: str, status: str = "dead") -> dict:
    return {"type": "set_status", "entity": who, "status": status}


TOLD = [
    ("Maren is dead.", "maren", "dead"),
    ("Maren is dead!", "maren", "dead"),
    ("Maren is dead, her eyes open to the rain.", "maren", "dead"),
    ("Maren lies dead on the docks.", "maren", "dead"),
    ("Maren lies dead.", "maren", "dead"),
    ("Tobin is fast asleep.", "tobin", "asleep"),
    ("Maren is still asleep.", "maren", "asleep"),
    ("Tobin is asleep in the cottage.", "tobin", "asleep"),
    ("Maren is unconscious.", "maren", "unconscious"),
]


@pytest.mark.parametrize(("text", "who", "label"), TOLD)
def test_a_state_said_outright_is_a_change(text: str, who: str, label: str) -> None:
    clashes, events = read(text)
    assert events == [dies(who, label)], text
    assert not clashes


SILENT = [
    # garbled fragments: no verb, nothing told
    "Maren, dead.",
    "Maren dead.",
    "Dead, Maren.",
    "Maren, dead, the sea.",
    # figures of speech
    "Maren is dead tired.",
    "Maren is dead drunk.",
    "Maren is dead to the world.",
    "Maren is asleep on her feet.",
    # not the story's present, not asserted
    "Maren was dead.",
    "Maren is not dead.",
    "Is Maren dead?",
    "If Maren is dead, you are lost.",
    "You fear Maren is dead.",
    "Maren is dead, Tobin says.",
    "Maren seems dead.",
]


@pytest.mark.parametrize("text", SILENT)
def test_a_fragment_or_a_figure_is_silence(text: str) -> None:
    clashes, events = read(text)
    assert events == [], text
    assert not any(kind == "status" for kind, _ in clashes), text


def settle(prose: str, *events: dict) -> tuple[state_engine.Settled, dict]:
    doc, rules = state()
    settled = state_engine.settle_reply(prose + block(*events), doc, rules, 1)
    settled = state_engine.read_into(settled, settled.prose, doc, rules, 1)
    statuses = {e: x.get("status") for e, x in settled.state["entities"].items()}
    return settled, statuses


def outcome(settled: state_engine.Settled) -> dict:
    (only,) = [o for o in settled.outcomes if o["type"] == "set_status" and o["by"] == "story"]
    return only


@pytest.mark.parametrize(
    ("prose", "doing"),
    [
        ("Tobin laughs and pours the tea.", "speaking"),
        ("Maren takes the brass key from the hook.", "handling things"),
        ("Maren walks to the cottage.", "going somewhere"),
    ],
)
def test_a_status_the_narration_contradicts_is_refused(prose: str, doing: str) -> None:
    who = "tobin" if prose.startswith("Tobin") else "maren"
    settled, statuses = settle(prose, dies(who))
    assert statuses[who] == "alive"
    refused = outcome(settled)
    assert refused["status"] == "rejected"
    name = who.title()
    assert f"the narration has {name} {doing}" in refused["reason"]
    assert prose in refused["reason"] and f"never tells that {name} is dead" in refused["reason"]
    assert who not in refused["reason"] and "status" not in refused["reason"]  # words, no ids
    assert refused["correction"].startswith("Set a status only when the narration tells it")


@pytest.mark.parametrize(
    "prose",
    [
        "Maren whispers your name and dies.",  # she speaks, and the narration tells it
        "Maren, dead.",  # a fragment: the model's reading stands
        "Maren collapses on the boards.",  # the dying may fall: no deed that forbids it
        "Tobin laughs and pours the tea.",  # someone else acts
        "The rain hammers the roof.",
    ],
)
def test_a_status_the_narration_allows_is_applied(prose: str) -> None:
    settled, statuses = settle(prose, dies("maren"))
    assert outcome(settled)["status"] == "applied", outcome(settled)["reason"]
    assert statuses["maren"] == "dead"


def test_the_narration_tells_another_state_and_it_stands() -> None:
    """The model says Maren died; the narration says she fell asleep: hers is refused,
    and the sleep is read from the narration."""
    settled, statuses = settle("Maren falls asleep by the fire.", dies("maren"))
    refused = outcome(settled)
    assert refused["status"] == "rejected"
    assert refused["reason"] == "the narration tells that Maren is asleep, not dead"
    assert statuses["maren"] == "asleep"
    assert settled.proposal["read"]["events"] == [dies("maren", "asleep")]
    # and waking: the narration's own normal status
    settled, statuses = settle("Maren falls asleep by the fire.", dies("maren", "asleep"))
    assert outcome(settled)["status"] == "applied" and statuses["maren"] == "asleep"


def test_a_condition_the_narration_contradicts_is_refused() -> None:
    add = {"type": "set_conditions", "entity": "maren", "add": ["unconscious"]}
    settled, _ = settle("Maren says the tide is turning.", add)
    (refused,) = [o for o in settled.outcomes if o["type"] == "set_conditions"]
    assert refused["status"] == "rejected"
    assert "the narration has Maren speaking" in refused["reason"]


def test_the_player_is_never_refused_by_the_narration() -> None:
    doc, rules = state()
    hear = lambda: heard("Tobin laughs and pours the tea.", doc, rules)  # noqa: E731
    after, report = apply_proposal(
        doc, {"events": [dies("tobin")]}, rules, 1, authority="player", heard=hear
    )
    assert report.outcomes[0].status == "applied" and after.entities["tobin"].status == "dead"
    after, report = apply_proposal(doc, {"events": [dies("tobin")]}, rules, 1, heard=hear)
    assert report.outcomes[0].status == "rejected" and after.entities["tobin"].status == "alive"


def test_the_narration_is_read_only_when_a_status_is_proposed() -> None:
    doc, rules = state()
    calls = []

    def hear():
        calls.append(1)
        return heard("Tobin laughs.", doc, rules)

    event = {"type": "set_flag", "flag": "storm", "value": True}
    apply_proposal(doc, {"events": [event]}, rules, 1, heard=hear)
    assert calls == []
    apply_proposal(doc, {"events": [dies("tobin"), dies("maren")]}, rules, 1, heard=hear)
    assert calls == [1]


def test_insights_shows_the_refusal_in_words(
    client: TestClient, adventure_id: int, scripted: ScriptedProvider
) -> None:
    scripted.queue("Maren laughs and coils a rope on the quay." + block(dies("maren")))
    done = client.post(
        f"/api/adventures/{adventure_id}/turns", json={"kind": "do", "text": "wave"}
    ).json()
    state_now = client.get(f"/api/adventures/{adventure_id}/state").json()["document"]
    assert state_now["entities"]["maren"]["status"] == "alive"
    page = html.unescape(client.get(f"/adventures/{adventure_id}").text)
    assert "1 of the model's changes was not applied" in page
    insights = client.get(f"/adventures/{adventure_id}/insights?turn={done['turn']['id']}").text
    insights = html.unescape(insights)
    assert "refused: the narration has Maren speaking" in insights
    assert "never tells that Maren is dead" in insights
    assert "Set a status only when the narration tells it: Maren is still speaking." in insights


FEN = {"where": "fenmouth", "origin": "deserter", "player_at": "chapel"}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("You're back to the quay.", "quay"),  # SmolLM2's words in play, after "go back"
        ("You are back at the quay.", "quay"),
        ("You're back on the quay, soaked.", "quay"),
        ("You are back in the harbour office.", "harbour_office"),
    ],
)
def test_a_return_told_outright_moves_you_not_a_clash(text: str, where: str) -> None:
    """Told with the player in the chapel: a move, where it used to be a place clash."""
    clashes, events = read(text, **FEN)
    assert not clashes, text
    assert events[0] == {"type": "set_location", "entity": "player", "location": where}


@pytest.mark.parametrize(
    "text",
    [
        "You're back to square one.",
        "If you are back at the quay, you rest.",
        "You are not back at the quay.",
        "You were back at the quay.",
        "You'll be back at the quay soon.",
        "Are you back at the quay?",
        "You're back at the quay in your mind.",
    ],
)
def test_a_return_not_told_is_silence(text: str) -> None:
    assert read(text, **FEN) == (set(), [])


def test_someone_else_back_here_arrives() -> None:
    _, events = read("Oda is back at the chapel.", **FEN)
    assert events[0] == {"type": "set_location", "entity": "oda_fenn", "location": "chapel"}
