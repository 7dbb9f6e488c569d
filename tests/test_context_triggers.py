"""Story-card and in-scene triggers with AI Dungeon semantics."""

from __future__ import annotations

import pytest

from talekeeper.context.triggers import (
    characters_in,
    match_cards,
    match_characters,
    recent_window,
    split_triggers,
)

CARDS = [
    {"name": "Boat", "entry": "A leaky rowing boat.", "triggers": "boat"},
    {"name": "Key", "entry": "The brass key.", "triggers": " Key , brass"},
    {"name": "Lantern room", "entry": "Top of the tower.", "triggers": "lantern room"},
    {"name": "No entry", "entry": "  ", "triggers": "boat"},
    {"name": "No triggers", "entry": "Never sent.", "triggers": " , ,"},
]


def window(action: str = "", *turns: tuple[str, str]):
    return recent_window([(i + 1, a, n) for i, (a, n) in enumerate(turns)], action, turns=4)


def names(fired) -> list[str]:
    return [t.key for t in fired]


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Maren, ferrywoman, ferry", ["maren", "ferrywoman", "ferry"]),
        (" Key , brass,,", ["key", "brass"]),
        ("lantern room", ["lantern room"]),
        ("", []),
        (None, []),
        (["A", "a", "b"], ["a", "b"]),
    ],
)
def test_split_triggers(raw, expected) -> None:
    assert split_triggers(raw) == expected


def test_case_insensitive_and_partial_word() -> None:
    assert names(match_cards(CARDS, window("> You row the BOATS ashore."))) == ["Boat"]
    # partial-word: "key" fires inside "monkeys", as in AI Dungeon
    assert names(match_cards(CARDS, window("> You feed the monkeys."))) == ["Key"]


def test_phrases_are_space_sensitive() -> None:
    assert names(match_cards(CARDS, window("> You climb to the lantern room."))) == ["Lantern room"]
    assert names(match_cards(CARDS, window("> You light the lantern. The room is dark."))) == []


def test_cards_without_entry_or_triggers_never_fire() -> None:
    fired = match_cards(CARDS, window("> boat boat boat"))
    assert "No entry" not in names(fired) and "No triggers" not in names(fired)


def test_reply_triggers_next_turn_and_stays_while_in_window() -> None:
    # Turn 1's narration mentions the boat: the prompt for turn 2 scans it.
    turns = [("> You wait.", "A boat drifts in.")]
    fired = match_cards(CARDS, window("> You wait.", *turns))
    assert (
        names(fired) == ["Boat"]
        and fired[0].where == "turn 1 (narration)"
        and fired[0].trigger == "boat"
    )
    # Four quiet turns later it has left the window.
    quiet = turns + [("> You wait.", "Nothing happens.")] * 4
    assert names(match_cards(CARDS, window("> You wait.", *quiet))) == []
    assert names(match_cards(CARDS, window("> You wait.", *quiet[:4]))) == ["Boat"]


def test_most_recent_mention_first_and_reported() -> None:
    fired = match_cards(CARDS, window("> You take the brass key.", ("> You see a boat.", "")))
    assert names(fired) == ["Key", "Boat"]
    assert fired[0].where == "your action" and fired[1].where == "turn 1 (action)"


def test_characters_in_scene_by_name_or_alias() -> None:
    document = {
        "entities": {
            "player": {"id": "player", "name": "Ada", "type": "player", "aliases": ["you"]},
            "maren": {
                "id": "maren",
                "name": "Maren",
                "type": "person",
                "aliases": ["the ferrywoman"],
            },
            "tobin": {
                "id": "tobin",
                "name": "Tobin",
                "type": "person",
                "aliases": ["old keeper", "he"],
            },
            "gull": {"id": "gull", "name": "Gull", "type": "beast", "aliases": []},
            "docks": {"id": "docks", "name": "Greywater docks", "type": "place"},
        },
        "stats": {"npcs": {"gull": {}}},
    }
    chars = characters_in(document)
    assert [c[0] for c in chars] == ["maren", "tobin", "gull"]
    fired = match_characters(
        chars, window("> You wave to the ferrywoman.", ("", "He says nothing."))
    )
    assert [t.key for t in fired] == ["maren"]  # "he" is too short to count
    assert characters_in(None) == []
