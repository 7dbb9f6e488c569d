"""The player's own changes read from their Do action (state/acted.py): read where the
narration leaves them unsaid, left alone where the model or the narration already decided,
and never from an intention, a question or a condition (the corpus's `action` set covers
the narrations that refuse or block)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from talekeeper.state import apply_proposal
from talekeeper.state.acted import ACTION, acted_changes, intended_only, refused
from talekeeper.state.document import PLAYER_ID
from talekeeper.state.telling import read_telling
from tests.state.test_reader_shapes import state

WALK = "You walk to the keeper's cottage."
QUIET = "The keeper's cottage, the only way to reach the headland."


def test_a_move_the_narration_leaves_unsaid_is_read_from_the_action_and_marked_so():
    doc, rules = state()
    telling = read_telling(QUIET, doc, doc, rules, 1, action=WALK)
    assert [t.source for t in telling.told] == [ACTION]
    assert telling.told[0].to_json()["from"] == "action"
    assert telling.after.entities[PLAYER_ID].location == "cottage"
    assert telling.after.scene.location == "cottage"
    assert all(o.status == "applied" for o in telling.report.outcomes if o.index is not None)
    # the narration alone moves nobody; without the action nothing is read
    assert read_telling(QUIET, doc, doc, rules, 1).told == ()


def test_the_models_own_move_wins():
    doc, rules = state()
    moved, report = apply_proposal(
        doc,
        {"events": [{"type": "set_location", "entity": PLAYER_ID, "location": "lighthouse"}]},
        rules,
        1,
    )
    telling = read_telling(QUIET, doc, moved, rules, 1, report, action=WALK)
    assert telling.told == ()
    assert telling.after.entities[PLAYER_ID].location == "lighthouse"


def test_the_narrations_own_move_wins_and_is_never_doubled():
    doc, rules = state()
    elsewhere = read_telling("You go into the lighthouse.", doc, doc, rules, 1, action=WALK)
    assert [t.source for t in elsewhere.told] == ["narration"]
    assert elsewhere.after.entities[PLAYER_ID].location == "lighthouse"
    same = read_telling("You go into the keeper's cottage.", doc, doc, rules, 1, action=WALK)
    assert [t.source for t in same.told] == ["narration"]


@pytest.mark.parametrize(
    "action",
    [
        "You try to walk to the keeper's cottage.",
        "You want to go to the keeper's cottage.",
        "You look for the keeper's cottage.",
        "If the rain stops, you walk to the keeper's cottage.",
        "You walk to the keeper's cottage?",
        "You decide to walk to the keeper's cottage.",
        "You don't walk to the keeper's cottage.",
        "You say you will walk to the keeper's cottage tomorrow.",
    ],
)
def test_an_intention_a_question_or_a_condition_changes_nothing(action):
    doc, rules = state()
    assert read_telling(QUIET, doc, doc, rules, 1, action=action).told == ()


@given(st.sampled_from(["locked", "flooded", "can't", "refuses", "stop", "blocked", "fails"]))
def test_a_narration_that_refuses_or_blocks_changes_nothing(word):
    doc, rules = state()
    narration = f"The way to the keeper's cottage {word}, the wind says."
    assert refused(narration)
    assert acted_changes(WALK, narration, [], doc, rules) == []


def test_the_words_of_an_intention_are_known():
    assert intended_only("You try to open the door.")
    assert intended_only("Where is the lighthouse?")
    assert not intended_only(WALK)
    assert not refused(QUIET)


def test_an_item_is_taken_only_when_free_here_or_held_by_someone_here():
    doc, rules = state()  # the docks: Tobin, who holds the key, is at his cottage
    take = "You take the brass key."
    assert read_telling("Rain.", doc, doc, rules, 1, action=take).told == ()
    doc, rules = state(player_at="cottage")
    told = read_telling("Tobin watches the fire.", doc, doc, rules, 1, action=take).told
    assert [e["holder"] for t in told for e in t.events] == [PLAYER_ID]


def test_the_guard_holds_the_narration_against_the_place_the_action_moved_to():
    # with the action's move, Tobin at his cottage is no clash; where the narration takes
    # the player elsewhere (it wins the move), he is one
    doc, rules = state()
    narration = "Tobin hands you a mug of tea. You go into the lighthouse."
    telling = read_telling(narration, doc, doc, rules, 1, action=WALK)
    assert [t.source for t in telling.told] == ["narration"]  # the narration wins the move
    assert {(c.kind, c.about) for c in telling.contradictions} == {("presence", "tobin")}
    quiet = read_telling(f"{QUIET} Tobin hands you a mug of tea.", doc, doc, rules, 1, action=WALK)
    assert [t.source for t in quiet.told] == [ACTION]
    assert quiet.contradictions == ()
