"""The compiled card set kept by content: a turn with unchanged cards reuses it, and
any change to any card (or to the linger) is seen at once — never a stale set."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.context import cardset
from talekeeper.context.cardspec import load_card
from talekeeper.context.triggers import MAX_CARDS
from talekeeper.context.worldinfo import Part, select

BASE = [
    {
        "type": "location",
        "name": "Pier",
        "entry": "The pier creaks.",
        "triggers": "pier, dock",
        "notes": "",
    },
    {
        "type": "character",
        "name": "Maren",
        "entry": "Maren rows the ferry.",
        "triggers": "maren",
        "sticky": 2,
    },
]


def decoded(raw: list) -> list:
    """The cards as the store hands them over: freshly decoded JSON, new objects."""
    return json.loads(json.dumps(raw))


def test_unchanged_cards_reuse_the_set_and_a_change_is_seen() -> None:
    first = cardset.card_set(decoded(BASE), 4)
    assert cardset.card_set(decoded(BASE), 4) is first  # same content, new objects: a hit
    assert cardset.card_set(decoded(BASE), 0) is not first  # the linger is part of the key
    edited = decoded(BASE)
    edited[0]["entry"] = "The pier is gone."
    again = cardset.card_set(edited, 4)
    assert again is not first and again.cards[0].entry == "The pier is gone."
    # linger: a card without timers of its own gets it; one with its own keeps them
    assert [c.sticky for c in first.cards] == [4, 2]


def test_an_edit_in_place_is_seen_and_equal_values_validate_alike() -> None:
    raw = decoded(BASE)
    assert cardset.card_set(raw).cards[0].entry == "The pier creaks."
    raw[0]["entry"] = "Edited in place."  # the set keeps its own copy, not the caller's list
    assert cardset.card_set(raw).cards[0].entry == "Edited in place."
    # True, 1 and 1.0 compare equal and validate alike, so reusing a set built from one
    # for another is right.
    as_int = [{**BASE[0], "constant": 1, "sticky": 1.0}]
    as_bool = [{**BASE[0], "constant": True, "sticky": True}]
    assert cardset.card_set(as_int).cards == cardset.card_set(as_bool).cards
    assert [load_card(c) for c in as_int] == [load_card(c) for c in as_bool]


def test_only_card_objects_count_and_at_most_max_cards() -> None:
    raw = [BASE[0], "not a card", 7, BASE[1]]
    assert [c.name for c in cardset.card_set(raw).cards] == ["Pier", "Maren"]
    many = [{"entry": f"lore {i}", "triggers": f"k{i}"} for i in range(MAX_CARDS + 5)]
    assert len(cardset.card_set(many).cards) == MAX_CARDS


field_values = {
    "entry": st.text(min_size=1, max_size=12),
    "triggers": st.sampled_from(["pier", "maren", "pier, maren", "/ma(r|l)en/i", "boat"]),
    "sticky": st.integers(0, 3),
    "cooldown": st.integers(0, 2),
    "constant": st.booleans(),
    "enabled": st.booleans(),
    "probability": st.integers(0, 100),
    "whole_words": st.booleans(),
    "order": st.integers(-3, 3),
}
edit_st = st.tuples(st.integers(0, 5), st.sampled_from(sorted(field_values))).flatmap(
    lambda at: st.tuples(st.just(at[0]), st.just(at[1]), field_values[at[1]])
)


@settings(max_examples=60, deadline=None)
@given(st.lists(edit_st, min_size=1, max_size=12), st.integers(0, 4))
def test_after_any_edits_the_set_is_the_cards_as_stored_now(edits, linger) -> None:
    """Each edit (a field of a card changed, as the cards panel or an import would) is
    followed by a turn: the set it gets behaves exactly like cards loaded afresh."""
    raw = [dict(c) for c in BASE] + [
        {"name": f"c{i}", "entry": "x", "triggers": "boat"} for i in range(4)
    ]
    text = [Part.of("your action", "Maren walks the pier to the boat", 0)]
    for at, name, value in edits:
        raw[at][name] = value
        got = cardset.card_set(decoded(raw), linger)
        fresh = [load_card(c) for c in raw]
        if linger:
            fresh = [
                c if c.sticky or c.cooldown else c.model_copy(update={"sticky": linger})
                for c in fresh
            ]
        assert list(got.cards) == fresh
        ours = select(got, text, turn=3, seed="s", last_fired={1: 2})
        theirs = select(fresh, text, turn=3, seed="s", last_fired={1: 2})
        assert [(d.index, d.why) for d in ours.fired] == [(d.index, d.why) for d in theirs.fired]
