"""Sentence shapes the reader learned from the second held-out batch, each read where it
tells something and silent where it should be: lists of subjects, an unknown verb after
"you", a participle before the subject, an inverted sentence, a person's hands, where you
look from, a describing word before a place, passing out, a leave-with, and the frames
after the verb ("… in your memory")."""

from __future__ import annotations

import json
from functools import cache

import pytest

from talekeeper.service.origins import with_origin
from talekeeper.service.scenarios import fill_placeholders, placeholder_answers
from talekeeper.service.shipped_scenarios import builtin_scenarios
from talekeeper.state import Document, initial_document, load_rules
from talekeeper.state.document import PLAYER_ID
from talekeeper.state.situation import Situation
from talekeeper.state.telling import read_telling


@cache
def _start(prefix: str, origin: str | None) -> tuple[str, object]:
    data = next(d for d in builtin_scenarios() if d["id"].startswith(prefix))
    data = with_origin(fill_placeholders(data, placeholder_answers(data, None)), origin)
    rules = load_rules(data["rules"])
    return json.dumps(initial_document(rules).to_json()), rules


def state(where: str = "greywater", origin: str | None = None, **patch) -> tuple[Document, object]:
    text, rules = _start(where, origin)
    doc = Document.model_validate(json.loads(text))
    if "player_at" in patch:
        place = patch["player_at"]
        view = Situation.of(doc, rules)
        doc.entities[PLAYER_ID].location = doc.scene.location = place
        doc.scene.present = sorted(
            e for e, x in doc.entities.items() if x.location == place and e in view.status
        )
    for eid, label in patch.get("status", {}).items():
        doc.entities[eid].status = label
    for item, holder in patch.get("holds", {}).items():
        doc.possessions[item] = holder
    return doc, rules


def read(text: str, where: str = "greywater", origin: str | None = None, **patch):
    doc, rules = state(where, origin, **patch)
    telling = read_telling(text, doc, doc, rules, 1)
    clashes = {(c.kind, c.about) for c in telling.contradictions}
    events = [e for t in telling.told for e in t.events]
    return clashes, events


FLAGGED = [
    # lists of subjects, with verbs the lexicon does not know
    ("Maren and Tobin haul the ferry up onto the shingle.", {}, ("presence", "tobin")),
    ("Maren, Tobin and you huddle under the eaves.", {}, ("presence", "tobin")),
    ("Maren, Tobin, and you wait.", {}, ("presence", "tobin")),
    (
        "Oda and the clerk pore over a damp ledger.",
        {"where": "fenmouth", "origin": "deserter"},
        ("presence", "wat"),
    ),
    # a participle before the subject is the subject's
    ("Gripping the brass key, you head for the tower.", {}, ("item", "brass_key")),
    (
        "Trimming the wick with your tools, you hum.",
        {"holds": {"toolkit": "maren"}},
        ("item", "toolkit"),
    ),
    # inverted: the place phrase, the verb, then who
    ("Beside the lobster pots stands Tobin, arms folded.", {}, ("presence", "tobin")),
    ("Up the path comes Tobin.", {"status": {"tobin": "dead"}}, ("status", "tobin")),
    # a person's hands are where the person is
    ("The keeper's gnarled hands fumble with a coil of rope.", {}, ("presence", "tobin")),
    # "you" and a verb the lexicon does not know, after a place phrase
    (
        "Back on the docks, you wring out your sleeves.",
        {"player_at": "lighthouse"},
        ("place", "player"),
    ),
    ("You wring your hands.", {"status": {"player": "asleep"}}, ("status", "player")),
    # where you look from
    ("From the gallery of the lighthouse you look down at the sea.", {}, ("place", "player")),
    ("You gaze down from the lighthouse at the docks.", {}, ("place", "player")),
    # a describing word before a place's last word
    (
        "You stand on the fog-slick quay.",
        {"where": "fenmouth", "origin": "pilgrim"},
        ("place", "player"),
    ),
    (
        "You stand on the rain-dark quay, your beads in hand.",
        {"where": "fenmouth", "origin": "pilgrim"},
        ("place", "player"),
    ),
    # a grip or a hand on an item is holding it, whatever the verb after it
    ("Maren's grip on the key is tight.", {}, ("item", "brass_key")),
    ("Maren's fingers close around the brass key.", {}, ("item", "brass_key")),
    ("Maren's hands are wrapped tight around the key.", {}, ("item", "brass_key")),
    ("Maren keeps a firm grip on the brass key.", {}, ("item", "brass_key")),
    ("Maren closes her hand around the brass key.", {}, ("item", "brass_key")),
    ("Your knuckles whiten on the brass key.", {}, ("item", "brass_key")),
    ("The brass key glints in Maren's hand.", {}, ("item", "brass_key")),
    ("The key in Maren's fist is cold.", {}, ("item", "brass_key")),
    ("The brass key sits heavy in your palm.", {}, ("item", "brass_key")),
    # "they both", "the two of them": each of the people just listed by name
    ("You look at Maren and Tobin. They both laugh.", {}, ("presence", "tobin")),
    ("You look at Maren and Tobin, and they are both holding the key.", {}, ("presence", "tobin")),
    ("You look at Maren and Tobin, and they both hold the key.", {}, ("item", "brass_key")),
    ("You nod to Maren and Tobin. The two of them grin.", {}, ("presence", "tobin")),
    ("You nod to Maren and Tobin. Both of them grin.", {}, ("presence", "tobin")),
    # describing words, with commas, before a place's whole name or a part of it
    ("You sit in the warm, cramped cottage.", {}, ("place", "player")),
    ("You stand on the narrow gallery of the lighthouse.", {}, ("place", "player")),
    (
        "You stand in the fog-bound harbour office.",
        {"where": "fenmouth", "origin": "pilgrim"},
        ("place", "player"),
    ),
    # who comes over from a spot inside the place was there all along: no arrival
    ("Maren hurries over from the hearth.", {"player_at": "cottage"}, ("presence", "maren")),
]


@pytest.mark.parametrize(("text", "patch", "clash"), FLAGGED)
def test_each_shape_is_read(text, patch, clash):
    assert clash in read(text, **patch)[0]


SILENT = [
    ("Maren and Tobin were friends once.", {}),
    ("Maren and Tobin, she says, never speak anymore.", {}),
    ("You think Maren and Tobin quarrel over the key.", {}),
    ("Maren tells you tomorrow the tide turns.", {"status": {"player": "asleep"}}),
    ("If you wring the rope, it breaks.", {"status": {"player": "asleep"}}),
    ("Thinking of Tobin, you stare at the sea.", {}),
    ("Gazing at the lighthouse, you think of Tobin.", {}),
    ("Remembering the brass key, you shiver.", {}),
    ("Leaving the brass key with Tobin, you step outside.", {"player_at": "cottage"}),
    ("Up on the headland stands Tobin, a dark shape against the sky.", {}),
    ("Beyond the harbour wall waits the keeper.", {}),
    ("Behind the cottage stands Tobin's boat.", {}),
    ("Tobin's hands shake in your memory.", {}),
    ("Tobin laughs in your memory.", {}),
    ("Tobin's hands are steady, Maren says.", {}),
    ("You look away from the lighthouse.", {}),
    ("Far from the lighthouse, you watch the sea.", {}),
    ("You hear a shout from the lighthouse.", {}),
    ("You stand in the lighthouse's shadow.", {}),
    ("You stand on the other quay.", {"where": "fenmouth", "origin": "pilgrim"}),
    ("You stand on the fisherman's quay.", {"where": "fenmouth", "origin": "pilgrim"}),
    ("You stand on the busy quay.", {"where": "fenmouth", "origin": "deserter"}),
    ("You nearly pass out from the pain.", {}),
    ("Tobin nearly falls asleep.", {"player_at": "cottage"}),
    ("Maren's grip on the rail is tight.", {}),
    ("Maren's grip on the key is tight.", {"holds": {"brass_key": "maren"}}),
    ("Maren's grip on the key would be tight.", {}),
    ("Maren's grip on his key is tight.", {}),
    ("Maren's gaze rests on the brass key.", {}),
    ("Maren's hand hovers over the brass key.", {}),
    ("Maren's fingers do not close on the key.", {}),
    ("Maren breaks his grip on the key.", {}),
    ("Maren loosens Tobin's grip on the key.", {}),
    ("You picture Maren's grip on the key.", {}),
    ("You imagine the key in Maren's hand.", {}),
    ("The brass key was in Maren's hand once.", {}),
    ("The key is not in Maren's hand.", {}),
    ("Tobin's key glints in Maren's hand.", {}),
    ("A key glints in Maren's hand.", {}),
    ("The brass key glints in Maren's lantern light.", {}),
    ("You look at Maren and Tobin. They laugh.", {}),
    ("You think of Maren and Tobin. They both laughed once.", {}),
    ("You think of Maren and Tobin. They both would laugh at you.", {}),
    ("You think of Maren and Tobin. The gulls wheel. Maren sighs. They both nod.", {}),
    ("You look at Maren and Tobin as the boats rock. They both laugh.", {}),
    ("You think of Maren and Tobin, and of the fishermen. They all laugh.", {}),
    ("You think of Maren and Wat's boat. They both laugh.", {}),
    ("Maren or Tobin must have it. They both laugh.", {}),
    ("You and Maren wait. They both nod.", {}),
    ("Maren and Tobin's boats rock. They both creak.", {}),
    ("You stand on the cold, windswept docks.", {}),
    ("You stand on the other, busier quay.", {"where": "fenmouth", "origin": "pilgrim"}),
    # what one looks, points or calls at is not where one is
    ("Maren glances up at the dark lighthouse.", {}),
    ("Maren stares at the lighthouse.", {}),
    ("Maren waves at the cottage.", {}),
    ("Maren shouts at the lighthouse.", {}),
    ("Tobin comes over from the hearth.", {"player_at": "cottage"}),
    ("Maren comes over from the rail.", {}),
]


@pytest.mark.parametrize(("text", "patch"), SILENT)
def test_and_silent_where_it_should_be(text, patch):
    assert read(text, **patch) == (set(), [])


def test_told_changes_of_the_new_shapes():
    fen = {"where": "fenmouth", "origin": "deserter"}
    _, events = read("The sellsword drinks too much and passes out on the quay.", **fen)
    assert events == [{"type": "set_status", "entity": "brannoc", "status": "unconscious"}]
    _, events = read("Brannoc is knocked out by a falling spar.", **fen)
    assert events == [{"type": "set_status", "entity": "brannoc", "status": "unconscious"}]
    _, events = read(
        "Tobin grunts. He shoves the brass key across the table to you.", player_at="cottage"
    )
    assert events == [{"type": "set_possession", "item": "brass_key", "holder": PLAYER_ID}]
    _, events = read("You leave your tools with Maren.")
    assert events == [{"type": "set_possession", "item": "toolkit", "holder": "maren"}]
    _, events = read("Down the pier comes Tobin, lantern swinging.")
    assert {"type": "set_scene", "present": ["maren", "tobin"]} in events
    _, events = read("Tobin steps in from the doorway.")  # a door is come in through
    assert {"type": "set_scene", "present": ["maren", "tobin"]} in events
    clashes, events = read("Walking into the lighthouse, you shake off the rain.")
    assert clashes == set() and events[0]["location"] == "lighthouse"
