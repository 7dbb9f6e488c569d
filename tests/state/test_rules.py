"""Scenario rules: a declaration is checked whole and every mistake is named by path."""

from __future__ import annotations

import pytest

from talekeeper.state import (
    PLAYER_ID,
    RulesError,
    check_rules,
    empty_rules,
    initial_document,
    load_rules,
)


def test_the_demo_declaration_is_valid(raw_rules):
    assert check_rules(raw_rules) == []


def _with(raw, path, value):
    """Set `value` at a dotted path of `raw` (list indices as numbers)."""
    *parents, last = path.split(".")
    node = raw
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return raw


MISTAKES = [
    # (path to set, value, expected message)
    ("stats.player.hp.max", -5, "stats.player.hp.max: must be ≥ min (0)"),
    ("stats.player.hp.initial", 150, "stats.player.hp.initial: 150 is above max (100)"),
    ("stats.player.hp.initial", -1, "stats.player.hp.initial: -1 is below min (0)"),
    (
        "stats.player.hp.initial",
        2.5,
        "stats.player.hp.initial: must be a whole number (or set integer: false)",
    ),
    (
        "stats.player.hp.bands",
        [[0, 50, "low"], [50, 120, "high"]],
        "stats.player.hp.bands[1]: ends at 120, above max (100)",
    ),
    (
        "stats.player.hp.bands",
        [[0, 60, "low"], [50, 100, "high"]],
        "stats.player.hp.bands[1]: overlaps the band before it",
    ),
    (
        "stats.player.hp.bands",
        [[10, 10, "none"]],
        "stats.player.hp.bands[0]: hi (10) must be greater than lo (10)",
    ),
    ("stats.player.hp.bands", [[0, 50]], "stats.player.hp.bands[0]: must have at least 3 entries"),
    (
        "stats.player.hp.max_delta_per_turn",
        5,
        "stats.player.hp.max_delta_per_turn: unknown field (did you mean 'max_change_per_turn'?)",
    ),
    ("stats.player.hp.max_change_per_turn", 0, "stats.player.hp.max_change_per_turn: must be > 0"),
    ("stats.player.hp.cooldown", -1, "stats.player.hp.cooldown: must be ≥ 0"),
    (
        "stats.player.hp.kind",
        "gauge",
        "stats.player.hp.kind: must be one of 'number', 'counter', 'text'",
    ),
    ("stats.player.hp.min", "zero", "stats.player.hp.min: must be a number"),
    ("stats.player.luck.bands", [], "stats.player.luck.bands: a hidden stat needs bands"),
    (
        "stats.player.luck.bands",
        [[0, 3, "cursed"], [5, 10, "blessed"]],
        "stats.player.luck.bands: a hidden stat's bands must cover 0–10 without gaps",
    ),
    ("stats.player.mood.bands", [[0, 1, "x"]], "stats.player.mood.bands: a text stat has no bands"),
    (
        "stats.player.mood.initial",
        "x" * 30,
        "stats.player.mood.initial: longer than max_length (20)",
    ),
    ("stats.player.mood.initial", 3, "stats.player.mood.initial: a text stat starts as text"),
    ("stats.player.Bad Name", {}, "stats.player.Bad Name: not a valid name"),
    ("stats.npcs.bob", {"trust": {}}, "stats.npcs.bob: unknown entity id 'bob'"),
    (
        "stats.npcs.player",
        {"trust": {}},
        "stats.npcs.player: the player's stats go under stats.player",
    ),
    ("entities.2.location", "castle", "entities[2].location: unknown entity id 'castle'"),
    ("entities.2.id", "Gwen", "entities[2].id: 'Gwen' is not a valid id"),
    ("entities.2.id", "camp", "entities[2].id: 'camp' is already used by entities[0]"),
    ("entities.2.id", "player", "entities[2].id: 'player' is reserved for the player"),
    (
        "entities.2.name",
        "North Road",
        "entities[2].name: 'North Road' is also the name at entities[1].name",
    ),
    (
        "entities.2.aliases",
        ["Bandit Camp"],
        "entities[2].aliases[0]: 'Bandit Camp' is the name at entities[0].name",
    ),
    ("entities.2.colour", "red", "entities[2].colour: unknown field"),
    ("possessions.sword", "player", "possessions.sword: unknown entity id 'sword'"),
    ("possessions.key", "key", "possessions.key: an item cannot hold itself"),
    ("facts.0.subject", "nobody", "facts[0].subject: unknown entity id 'nobody'"),
    ("scene.present", ["gwen", "ghost"], "scene.present[1]: unknown entity id 'ghost'"),
    ("player.location", "castle", "player.location: unknown entity id 'castle'"),
    (
        "threads.0.objectives",
        [{"id": "o1", "text": "a"}, {"id": "o1", "text": "b"}],
        "threads[0].objectives[1].id: 'o1' is used twice in this thread",
    ),
    ("milestones.win", {}, "milestones.win.desc: required"),
    ("flags.lit", {"initial": "yes"}, "flags.lit.initial: must be true or false"),
    (
        "canon.forbidden_status_changes",
        [{"from": "dead"}],
        "canon.forbidden_status_changes[0].to: required",
    ),
    ("recent_events", ["a"] * 6, "recent_events: must have at most 5 entries"),
    ("version", 2, "version: must be 1"),
]


@pytest.mark.parametrize(
    ("path", "value", "expected"), MISTAKES, ids=[m[0] + "=" + repr(m[1])[:20] for m in MISTAKES]
)
def test_mistakes_are_reported_by_path(raw_rules, path, value, expected):
    errors = check_rules(_with(raw_rules, path, value))
    assert any(e.startswith(expected) for e in errors), errors


def test_load_rules_raises_with_every_mistake(raw_rules):
    _with(raw_rules, "stats.player.hp.max", -5)
    _with(raw_rules, "stats.player.mana.initial", 99)
    with pytest.raises(RulesError) as caught:
        load_rules(raw_rules)
    assert len(caught.value.errors) >= 2
    assert "stats.player.mana.initial" in str(caught.value)


def test_an_id_used_twice_is_named_in_every_list_and_an_odd_id_is_the_schemas():
    """Threads, a thread's objectives, a quest's objectives and the creation classes each
    refuse a repeated id; an id that is no string (a list, an object, missing) is reported by
    the schema as such, never as a repeat, and never crashes the check."""
    raw = {
        "threads": [{"id": "t", "objectives": [{"id": "a"}, {"id": "a"}]}, {"id": "t"}],
        "quests": {"q": {"objectives": [{"id": "x"}, {"id": "x"}, {"id": []}, {}, {}]}},
        "character": {"classes": [{"id": "c"}, {"id": "c"}, {"id": {}}, {"id": {}}]},
    }
    errors = [e for e in check_rules(raw) if "twice" in e]
    assert errors == [
        "threads[1].id: 't' is used twice",
        "threads[0].objectives[1].id: 'a' is used twice in this thread",
        "quests.q.objectives[1].id: 'x' is used twice in this quest",
        "character.classes[1].id: 'c' is used twice",
    ]
    assert "quests.q.objectives[2].id: must be a string" in check_rules(raw)


@pytest.mark.parametrize("raw", [None, [], "rules", 3])
def test_a_declaration_must_be_an_object(raw):
    assert check_rules(raw) == ["(rules): must be an object"]


def test_empty_rules_are_a_plain_narrative_adventure():
    rules = empty_rules()
    doc = initial_document(rules)
    assert list(doc.entities) == [PLAYER_ID]
    assert doc.stats.player == {} and doc.flags == {} and doc.milestones == {}


def test_defaults_are_documented_rules_not_guesses():
    rules = load_rules(
        {
            "stats": {
                "world": {"day": {"kind": "counter", "min": 1}},
                "player": {"debt": {"max": -10}, "gold": {}, "note": {"kind": "text"}},
            }
        }
    )
    assert rules.stats.world["day"].initial == 1  # its minimum
    assert rules.stats.player["debt"].initial == -10  # its maximum, when 0 is above it
    assert rules.stats.player["gold"].initial == 0
    assert rules.stats.player["note"].initial == ""
    assert rules.stats.player["note"].max_length == 60


def test_initial_document_holds_the_declared_world(rules):
    doc = initial_document(rules)
    assert doc.entities[PLAYER_ID].name == "Aldric"
    assert "you" in doc.entities[PLAYER_ID].aliases
    assert doc.entities[PLAYER_ID].location == "camp"
    assert doc.entities["gwen"].status == "alive"
    assert doc.possessions == {"key": "brannoc"}
    assert doc.facts[0].authority == "canon" and doc.facts[0].turn == 0
    assert doc.threads["rescue"].objectives[1].id == "o2"
    assert doc.scene.present == ["gwen", "brannoc"]
    assert doc.stats.player["hp"].value == 100 and doc.stats.player["hp"].changed is None
    assert doc.stats.npcs["gwen"]["trust"].value == 20
    assert doc.stats.npcs["brannoc"]["trust"].value == 0
    assert doc.flags == {"has_key": False, "alarm_raised": False}
    assert doc.milestones == {"rescue_gwen": None, "reach_capital": None}
    assert [e.text for e in doc.recent_events] == ["You crept up to the camp at dusk."]
    assert doc.moments == []


def test_each_npc_has_its_own_stats(rules):
    assert set(rules.stats.npcs["gwen"]) == {"health", "trust"}
    assert set(rules.stats.npcs["brannoc"]) == {"trust"}


def test_shape_and_reference_mistakes_are_reported_in_one_pass(raw_rules):
    """check_rules promises every mistake: a schema error must not hide a dangling id."""
    import copy

    raw = copy.deepcopy(raw_rules)
    raw["stats"]["player"]["hp"]["max"] = "lots"  # shape
    raw["entities"][0]["location"] = "atlantis"  # reference
    raw["possessions"] = {**raw.get("possessions", {}), "nowhere_item": "player"}  # reference
    raw["entities"].append(
        {"id": 7, "name": ["not", "a", "name"]}
    )  # shape, must not crash the pass
    errors = check_rules(raw)
    assert any(e.startswith("stats.player.hp.max:") for e in errors), errors
    assert any(e.startswith("entities[0].location:") and "atlantis" in e for e in errors), errors
    assert any(e.startswith("possessions.nowhere_item:") for e in errors), errors
    assert any(e.startswith(f"entities[{len(raw['entities']) - 1}]") for e in errors), errors


def test_one_wrong_bound_is_one_mistake_not_a_cascade() -> None:
    """min above max used to be reported again for the initial value and every band."""
    from talekeeper.state.rules import check_rules

    rules = {
        "version": 1,
        "stats": {
            "world": {
                "storm": {
                    "min": 50,
                    "max": 10,
                    "initial": 4,
                    "hidden": True,
                    "bands": [[0, 3, "calm"], [3, 7, "a gale"], [7, 10, "a tempest"]],
                }
            }
        },
    }
    assert check_rules(rules) == ["stats.world.storm.max: must be ≥ min (50)"]
