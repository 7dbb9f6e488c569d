"""normalise: a stored document comes back usable; broken sections are reset and said so."""

from __future__ import annotations

import copy
import json

import pytest

from talekeeper.state import (
    PLAYER_ID,
    VERSION,
    apply_proposal,
    empty_document,
    initial_document,
    normalise,
)


def played(doc, rules):
    new, _ = apply_proposal(
        doc,
        {
            "events": [
                {"type": "change_stat", "stat": "player.hp", "by": -25},
                {"type": "set_stat", "stat": "player.mood", "value": "grim"},
                {"type": "create_entity", "name": "Oda Fenn", "kind": "person", "location": "road"},
                {"type": "set_possession", "item": "key", "holder": "you"},
                {
                    "type": "add_fact",
                    "subject": "oda fenn",
                    "predicate": "owes",
                    "object": "you",
                    "value": 2.5,
                },
                {"type": "withdraw_fact", "fact": "f2", "reason": "paid"},
                {"type": "add_relationship", "source": "gwen", "kind": "ally of", "target": "you"},
                {"type": "set_attribute", "entity": "gwen", "attribute": "armed", "value": True},
                {"type": "reach_milestone", "milestone": "rescue_gwen"},
                {"type": "record_moment", "text": "Slipped", "weight": 4},
                {"type": "note_event", "text": "The key changed hands."},
            ]
        },
        rules,
        3,
    )
    return new


def test_a_valid_document_round_trips_unchanged(doc, rules):
    cases = [
        (doc, rules),
        (played(doc, rules), rules),
        (played(doc, rules), None),
        (empty_document(), None),
    ]
    for document, with_rules in cases:
        stored = json.loads(json.dumps(document.to_json()))
        back, repairs = normalise(stored, with_rules)
        assert repairs == []
        assert back.to_json() == document.to_json()


@pytest.mark.parametrize("raw", [None, [], "doc", 7])
def test_a_non_object_starts_again_from_the_initial_state(rules, raw):
    back, repairs = normalise(raw, rules)
    assert back.to_json() == initial_document(rules).to_json()
    assert repairs and "not a JSON object" in repairs[0]


def test_a_broken_section_is_reset_and_the_others_kept(doc, rules):
    stored = played(doc, rules).to_json()
    stored["facts"][0]["authority"] = "god"
    stored["moments"] = "lots"
    back, repairs = normalise(stored, rules)
    assert back.facts == initial_document(rules).facts  # declared defaults: the canon facts
    assert back.moments == []
    assert any(r.startswith("facts: reset to its default (0.authority") for r in repairs)
    assert any(r.startswith("moments: reset") for r in repairs)
    assert back.entities == played(doc, rules).entities  # untouched
    assert back.stats == played(doc, rules).stats


def test_without_rules_a_broken_section_is_reset_to_empty(doc, rules):
    stored = played(doc, rules).to_json()
    stored["threads"] = {"x": {"id": "x"}}
    back, repairs = normalise(stored)
    assert back.threads == {} and any(r.startswith("threads: reset") for r in repairs)


def test_no_coercion_is_guessed(doc, rules):
    stored = doc.to_json()
    stored["stats"]["player"]["hp"]["value"] = "55"  # a string where a number was
    stored["flags"]["has_key"] = "true"
    back, repairs = normalise(stored, rules)
    assert back.stats.player["hp"].value == 100 and back.flags["has_key"] is False
    assert "stats.player.hp: '55' does not fit a number stat; reset to its initial value" in repairs
    assert any(r.startswith("flags: reset") for r in repairs)


def test_missing_and_unknown_sections_and_versions(doc, rules):
    stored = doc.to_json()
    del stored["moments"], stored["version"]
    stored["extra"] = 1
    back, repairs = normalise(stored, rules)
    assert back.version == VERSION and back.moments == []
    assert any("version None" in r for r in repairs)
    assert "dropped unknown section 'extra'" in repairs
    assert "moments: missing; set to its default" in repairs
    stored["version"] = 99
    _, repairs = normalise(stored, rules)
    assert any("newer than this engine" in r for r in repairs)


def test_a_key_that_differs_from_its_id_resets_the_section(doc, rules):
    stored = doc.to_json()
    stored["entities"]["gwen"]["id"] = "gwendolyn"
    back, repairs = normalise(stored, rules)
    assert back.entities["gwen"].id == "gwen" and any(
        "key differs from its id" in r for r in repairs
    )


def test_duplicate_ids_reset_the_section(doc, rules):
    stored = played(doc, rules).to_json()
    stored["facts"].append(copy.deepcopy(stored["facts"][0]))
    _, repairs = normalise(stored, rules)
    assert "facts: reset to its default (an id is used twice)" in repairs


def test_dangling_references_are_dropped_entry_by_entry(doc, rules):
    stored = doc.to_json()
    del stored["entities"]["brannoc"]
    back, repairs = normalise(stored, rules)
    assert "key" not in back.possessions and back.scene.present == ["gwen"]
    assert "possessions.key: refers to a missing entity or itself; dropped" in repairs
    assert "scene.present: dropped brannoc (no such entity)" in repairs
    stored = doc.to_json()
    stored["entities"]["gwen"]["location"] = "atlantis"
    back, repairs = normalise(stored, rules)
    assert back.entities["gwen"].location is None


def test_the_player_is_always_there(doc, rules):
    stored = doc.to_json()
    del stored["entities"][PLAYER_ID]
    back, repairs = normalise(stored, rules)
    assert (
        back.entities[PLAYER_ID].name == "Aldric"
        and "entities.player: missing; restored" in repairs
    )


def test_recent_events_keep_the_newest_five(doc, rules):
    stored = doc.to_json()
    stored["recent_events"] = [{"turn": i, "text": f"e{i}"} for i in range(8)]
    back, repairs = normalise(stored, rules)
    assert [e.text for e in back.recent_events] == ["e3", "e4", "e5", "e6", "e7"]
    assert "recent_events: kept the newest 5, dropped 3" in repairs


def test_declarations_added_since_are_filled_in(doc, rules):
    stored = doc.to_json()
    del stored["stats"]["player"]["mana"], stored["stats"]["npcs"]["brannoc"]
    del stored["flags"]["alarm_raised"], stored["milestones"]["reach_capital"]
    back, repairs = normalise(stored, rules)
    assert back.stats.player["mana"].value == 20 and back.stats.npcs["brannoc"]["trust"].value == 0
    assert back.flags["alarm_raised"] is False and back.milestones["reach_capital"] is None
    assert len(repairs) == 4


def test_stats_that_do_not_fit_their_rule(doc, rules):
    stored = doc.to_json()
    stored["stats"]["player"]["hp"] = {"value": 140, "changed": 2}
    stored["stats"]["player"]["mood"] = {"value": 5, "changed": None}
    stored["stats"]["player"]["mana"] = {"value": 2.5, "changed": None}
    back, repairs = normalise(stored, rules)
    assert back.stats.player["hp"].value == 100 and back.stats.player["hp"].changed == 2
    assert back.stats.player["mood"].value == "wary" and back.stats.player["mana"].value == 20
    assert "stats.player.hp: 140 is outside its declared range; held to 100" in repairs
    assert len(repairs) == 3
