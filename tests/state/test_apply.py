"""apply_proposal: every outcome kind, every layer, every rule of seeds 000 and 001."""

from __future__ import annotations

import pytest

from talekeeper.state import PLAYER_ID, apply_proposal, initial_document


def run(doc, rules, *events, turn=1, authority="story"):
    return apply_proposal(doc, {"events": list(events)}, rules, turn, authority)


def one(doc, rules, event, **kw):
    new, report = run(doc, rules, event, **kw)
    assert len(report.outcomes) == 1, report.outcomes
    return new, report.outcomes[0]


def stat(doc, path):
    parts = path.split(".")
    if parts[0] == "npc":
        return doc.stats.npcs[parts[1]][parts[2]].value
    return getattr(doc.stats, parts[0])[parts[1]].value


# --- seed 000's test checklist ---------------------------------------------------------


def test_a_change_over_the_per_turn_cap_is_limited_and_clamps_at_min(doc, rules):
    new, o = one(doc, rules, {"type": "change_stat", "stat": "player.hp", "by": -50})
    assert (o.status, o.before, o.after) == ("limited", 100, 70)
    assert "at most 30 per turn" in o.reason and o.correction is None
    for turn in (2, 3, 4):
        new, o = one(new, rules, {"type": "change_stat", "stat": "player.hp", "by": -30}, turn=turn)
    assert (
        stat(new, "player.hp") == 0
        and o.status == "limited"
        and "held at its minimum 0" in o.reason
    )


def test_the_cap_limits_a_turns_net_movement_across_events(doc, rules):
    new, report = run(
        doc,
        rules,
        {"type": "change_stat", "stat": "player.hp", "by": -20},
        {"type": "change_stat", "stat": "player.hp", "by": -20},
        {"type": "change_stat", "stat": "player.hp", "by": -20},
    )
    assert [o.status for o in report.outcomes] == ["applied", "limited", "unchanged"]
    assert stat(new, "player.hp") == 70
    assert "already moved as far as it may this turn" in report.outcomes[2].reason


def test_set_stat_is_absolute_and_paced_like_a_change(doc, rules):
    new, o = one(doc, rules, {"type": "set_stat", "stat": "player.hp", "value": 10})
    assert (o.status, o.after) == ("limited", 70)
    new, o = one(new, rules, {"type": "set_stat", "stat": "player.hp", "value": 60}, turn=2)
    assert (o.status, o.after) == ("applied", 60)


def test_cooldown_refuses_a_second_change_until_the_turns_pass(doc, rules):
    new, o = one(doc, rules, {"type": "change_stat", "stat": "player.mana", "by": 5}, turn=1)
    assert o.status == "applied"
    new2, o = one(new, rules, {"type": "change_stat", "stat": "player.mana", "by": 5}, turn=2)
    assert (o.status, o.layer) == ("rejected", "rules")
    assert "2-turn cooldown" in o.reason and "again in 2 turns" in o.correction
    assert new2.to_json() == new.to_json()
    _, o = one(new, rules, {"type": "change_stat", "stat": "player.mana", "by": 5}, turn=3)
    assert o.status == "rejected" and "again in 1 turn." in o.correction  # rests turns 2 and 3
    new4, o = one(new, rules, {"type": "change_stat", "stat": "player.mana", "by": 5}, turn=4)
    assert o.status == "applied" and stat(new4, "player.mana") == 30


def test_a_one_turn_cooldown_rests_exactly_the_next_turn(doc):
    """`cooldown: 1` and the stat guide's "then rests 1 turn" agree: the turn after a move
    is refused, the one after that is not (it used to never rest at all)."""
    from talekeeper.state import load_rules, stat_guide

    rules = load_rules(
        {"stats": {"player": {"nerve": {"min": 0, "max": 10, "initial": 5, "cooldown": 1}}}}
    )
    assert "then rests 1 turn" in stat_guide(rules)
    start = initial_document(rules)
    moved, o = one(start, rules, {"type": "change_stat", "stat": "player.nerve", "by": 1}, turn=1)
    assert o.status == "applied"
    _, o = one(moved, rules, {"type": "change_stat", "stat": "player.nerve", "by": 1}, turn=2)
    assert o.status == "rejected" and "1-turn cooldown" in o.reason
    after, o = one(moved, rules, {"type": "change_stat", "stat": "player.nerve", "by": 1}, turn=3)
    assert o.status == "applied" and stat(after, "player.nerve") == 7


def test_a_player_correction_is_not_paced(doc, rules):
    new, _ = one(doc, rules, {"type": "change_stat", "stat": "player.mana", "by": 5}, turn=1)
    new, o = one(
        new,
        rules,
        {"type": "set_stat", "stat": "player.mana", "value": 50},
        turn=2,
        authority="player",
    )
    assert (o.status, o.after) == ("applied", 50)  # no cooldown, no 15-per-turn cap
    new, o = one(
        new,
        rules,
        {"type": "set_stat", "stat": "player.mana", "value": 60},
        turn=2,
        authority="player",
    )
    assert o.status == "unchanged"  # the range still binds the player


def test_a_counter_refuses_a_negative_change_and_advances_on_plus_one(doc, rules):
    new, o = one(doc, rules, {"type": "change_stat", "stat": "world.day", "by": -1})
    assert (o.status, o.layer) == ("rejected", "rules") and "never falls" in o.reason
    assert "positive amount" in o.correction
    new, o = one(doc, rules, {"type": "change_stat", "stat": "world.day", "by": 1})
    assert (o.status, stat(new, "world.day")) == ("applied", 2)


def test_a_counter_refuses_an_absolute_below_its_value(doc, rules):
    """Seed 001: a count sent as an absolute is refused out loud, not absorbed."""
    new, _ = one(doc, rules, {"type": "change_stat", "stat": "player.fainted", "by": 2})
    _, o = one(new, rules, {"type": "set_stat", "stat": "player.fainted", "value": 1}, turn=2)
    assert o.status == "rejected" and "at least 2" in o.correction


def test_a_counter_stays_down_for_the_player_too(doc, rules):
    new, _ = one(doc, rules, {"type": "change_stat", "stat": "world.day", "by": 1})
    _, o = one(
        new, rules, {"type": "set_stat", "stat": "world.day", "value": 1}, authority="player"
    )
    assert o.status == "rejected"


def test_a_milestone_is_reached_once_and_stays(doc, rules):
    new, o = one(doc, rules, {"type": "reach_milestone", "milestone": "rescue_gwen"}, turn=7)
    assert (o.status, new.milestones["rescue_gwen"]) == ("applied", 7)
    again, o = one(new, rules, {"type": "reach_milestone", "milestone": "rescue_gwen"}, turn=9)
    assert (
        o.status == "applied"
        and o.before == o.after == 7
        and "already reached at turn 7" in o.reason
    )
    assert again.milestones["rescue_gwen"] == 7


@pytest.mark.parametrize(
    "event",
    [
        {"type": "reach_milestone", "milestone": "rescue_gwen", "reached": False},
        {"type": "set_flag", "flag": "rescue_gwen", "value": False},
        {"type": "set_stat", "stat": "milestones.rescue_gwen", "value": 0},
    ],
)
def test_nothing_unreaches_a_milestone(doc, rules, event):
    new, _ = one(doc, rules, {"type": "reach_milestone", "milestone": "rescue_gwen"})
    after, o = one(new, rules, event, turn=2)
    assert o.status == "rejected" and after.milestones["rescue_gwen"] == 1


def test_each_npc_stat_resolves_per_npc_by_id_or_name(doc, rules):
    new, o = one(doc, rules, {"type": "change_stat", "stat": "npc.gwen.trust", "by": 10})
    assert (o.target, stat(new, "npc.gwen.trust"), stat(new, "npc.brannoc.trust")) == (
        "npc.gwen.trust",
        30,
        0,
    )
    new, o = one(
        new, rules, {"type": "change_stat", "stat": "npc.Brannoc Thane.trust", "by": -5}, turn=2
    )
    assert (o.target, stat(new, "npc.brannoc.trust")) == ("npc.brannoc.trust", -5)


@pytest.mark.parametrize("proposal", [{"events": []}, None])
def test_an_empty_or_missing_proposal_is_a_no_op(doc, rules, proposal):
    new, report = apply_proposal(doc, proposal, rules, 1)
    assert report.outcomes == () and new.to_json() == doc.to_json()


# --- outcome kinds ------------------------------------------------------------------------


def test_unchanged_at_the_limit_says_so_with_the_real_limit(doc, rules):
    _, o = one(doc, rules, {"type": "change_stat", "stat": "player.hp", "by": 10})
    assert o.status == "unchanged" and o.before == o.after == 100
    assert o.reason == "player.hp is already at its maximum (100)"
    assert (
        "0 to 100" not in o.correction
        and "range 0–100" in o.correction
        and "don't raise it" in o.correction
    )


def test_setting_the_value_it_already_has_is_applied_not_refused(doc, rules):
    _, o = one(doc, rules, {"type": "set_stat", "stat": "player.hp", "value": 100})
    assert o.status == "applied" and o.correction is None


def test_a_hidden_stat_never_quotes_its_number(doc, rules):
    for event in (
        {"type": "change_stat", "stat": "player.luck", "by": 50},
        {"type": "change_stat", "stat": "player.luck", "by": -50},
        {"type": "set_stat", "stat": "player.luck", "value": 3},
    ):
        new, o = one(doc, rules, event)
        assert o.hidden
        text = o.reason + (o.correction or "")
        assert not any(ch.isdigit() for ch in text.replace("player.luck", "")), text
    new, _ = one(doc, rules, {"type": "set_stat", "stat": "player.luck", "value": 10})
    _, o = one(new, rules, {"type": "change_stat", "stat": "player.luck", "by": 1}, turn=2)
    assert o.status == "unchanged" and "'blessed'" in o.reason
    assert not any(ch.isdigit() for ch in (o.reason + o.correction).replace("player.luck", ""))


def test_text_stats(doc, rules):
    new, o = one(doc, rules, {"type": "set_stat", "stat": "player.mood", "value": "  hopeful "})
    assert (o.status, stat(new, "player.mood")) == ("applied", "hopeful")
    _, o = one(doc, rules, {"type": "set_stat", "stat": "player.mood", "value": "x" * 21})
    assert o.status == "rejected" and "at most 20 characters" in o.reason
    _, o = one(doc, rules, {"type": "change_stat", "stat": "player.mood", "by": 1})
    assert o.status == "rejected" and "set_stat" in o.correction
    _, o = one(doc, rules, {"type": "set_stat", "stat": "player.hp", "value": "55"})
    assert o.status == "rejected" and "number" in o.reason


def test_whole_number_stats_refuse_fractions(doc, rules):
    _, o = one(doc, rules, {"type": "change_stat", "stat": "player.hp", "by": -2.5})
    assert o.status == "rejected" and "whole numbers" in o.reason
    new, o = one(doc, rules, {"type": "change_stat", "stat": "player.hp", "by": -2.0})
    assert (
        o.status == "applied"
        and stat(new, "player.hp") == 98
        and isinstance(stat(new, "player.hp"), int)
    )


# --- layers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("proposal", "reason"),
    [
        ([], "not a JSON object"),
        ("events", "not a JSON object"),
        (3, "not a JSON object"),
        ({}, 'no "events" list'),
        ({"events": {"type": "note_event"}}, 'no "events" list'),
        ({"changes": []}, 'no "events" list'),
        ({"events": [{"type": "note_event", "text": "x" * 300}] * 200}, "too large"),
    ],
)
def test_envelope_refusals_change_nothing(doc, rules, proposal, reason):
    new, report = apply_proposal(doc, proposal, rules, 1)
    assert new.to_json() == doc.to_json()
    assert [(o.status, o.layer, o.index) for o in report.outcomes] == [
        ("rejected", "envelope", None)
    ]
    assert reason in report.outcomes[0].reason and report.outcomes[0].correction


def test_envelope_reads_only_the_first_events_of_a_runaway_block(doc, rules):
    events = [{"type": "note_event", "text": f"line {i}"} for i in range(40)]
    _, report = apply_proposal(doc, {"events": events}, rules, 1)
    assert report.outcomes[0].layer == "envelope" and "first 24 of 40" in report.outcomes[0].reason
    assert len(report.outcomes) == 25


def test_envelope_notes_unknown_keys_but_still_applies_events(doc, rules):
    new, report = apply_proposal(
        doc,
        {"events": [{"type": "set_flag", "flag": "has_key", "value": True}], "narration": "..."},
        rules,
        1,
    )
    assert [o.status for o in report.outcomes] == ["rejected", "applied"] and new.flags["has_key"]


class Trap(dict):
    """A dict that fails the test if any key but "type" is read."""

    def get(self, key, default=None):
        assert key == "type", f"read {key!r} before the allowlist"
        return super().get(key, default)

    def __getitem__(self, key):
        assert key == "type", f"read {key!r} before the allowlist"
        return super().__getitem__(key)


def test_allowlist_refuses_before_reading_any_other_field(doc, rules):
    _, o = one(doc, rules, Trap(type="heal", amount=5))
    assert (o.status, o.layer) == ("rejected", "allowlist")
    assert "'heal' is not an event type" in o.reason and "change_stat" in o.correction


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ("note", "not a JSON object"),
        ({"stat": "player.hp"}, 'no "type"'),
        ({"type": 5}, 'no "type"'),
        ({"type": "chnage_stat"}, "not an event type"),
    ],
)
def test_allowlist_refusals(doc, rules, event, reason):
    _, o = one(doc, rules, event)
    assert (o.status, o.layer) == ("rejected", "allowlist") and reason in o.reason


def test_a_close_misspelling_is_named(doc, rules):
    _, o = one(doc, rules, {"type": "chnage_stat", "stat": "player.hp", "by": 1})
    assert o.correction.startswith("Did you mean change_stat?")


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({"type": "change_stat", "stat": "player.hp"}, "missing 'by'"),
        ({"type": "change_stat", "stat": "player.hp", "by": "-5"}, "must be a number"),
        ({"type": "change_stat", "stat": "player.hp", "by": True}, "must be a number"),
        ({"type": "change_stat", "stat": "player.hp", "by": float("nan")}, "finite"),
        ({"type": "change_stat", "stat": "player.hp", "by": 1e12}, "too large"),
        (
            {"type": "change_stat", "stat": "player.hp", "by": -5, "reason": "hit"},
            "no field 'reason'",
        ),
        ({"type": "set_flag", "flag": "has_key", "value": "yes"}, "true or false"),
        ({"type": "note_event", "text": ""}, "must not be empty"),
        ({"type": "note_event", "text": "x" * 301}, "too long"),
        ({"type": "set_status", "entity": "gwen", "status": "a\nb"}, "single line"),
        ({"type": "record_moment", "text": "x", "weight": 11}, "1 to 10"),
        ({"type": "record_moment", "text": "x", "weight": 2.5}, "whole number"),
        ({"type": "create_entity", "name": "Oda", "kind": "person", "id": "Oda Fenn"}, "lowercase"),
        ({"type": "set_conditions", "entity": "gwen"}, "changes nothing"),
        ({"type": "set_conditions", "entity": "gwen", "add": [], "remove": []}, "changes nothing"),
        ({"type": "set_scene"}, "changes nothing"),
        ({"type": "set_scene", "present": "gwen"}, "must be a list"),
        (
            {"type": "resolve_thread", "thread": "rescue", "outcome": "won"},
            '"resolved" or "failed"',
        ),
    ],
)
def test_shape_refusals(doc, rules, event, reason):
    new, o = one(doc, rules, event)
    assert (o.status, o.layer) == ("rejected", "shape"), o
    assert reason in o.reason and "Example:" in o.correction
    assert new.to_json() == doc.to_json()


@pytest.mark.parametrize(
    ("event", "reason", "correction"),
    [
        (
            {"type": "set_status", "entity": "Bob", "status": "dead"},
            "no entity called 'Bob'",
            "Gwen (gwen)",
        ),
        (
            {"type": "set_possession", "item": "sword", "holder": "player"},
            "no item called 'sword'",
            "create_entity first",
        ),
        (
            {"type": "add_fact", "subject": "guard", "predicate": "is", "object": "asleep"},
            "ambiguous",
            "guard_1, guard_2",
        ),
        (
            {"type": "change_stat", "stat": "npc.bob.trust", "by": 5},
            "no NPC 'bob' has stats",
            "Gwen (gwen), Brannoc Thane (brannoc)",
        ),
        (
            {"type": "change_stat", "stat": "npc.gwen.mood", "by": 5},
            "gwen has no stat 'mood'",
            "npc.gwen.trust",
        ),
        (
            {"type": "change_stat", "stat": "player.helth", "by": 5},
            "player has no stat 'helth'",
            "player.hp",
        ),
        ({"type": "change_stat", "stat": "hp", "by": 5}, "not a stat path", "player.hp"),
        (
            {"type": "set_flag", "flag": "door_open", "value": True},
            "no flag 'door_open'",
            "has_key",
        ),
        (
            {"type": "reach_milestone", "milestone": "win"},
            "no milestone 'win'",
            "rescue_gwen (Rescue Gwen",
        ),
        ({"type": "withdraw_fact", "fact": "f9"}, "no fact 'f9'", "f1"),
        ({"type": "end_relationship", "relationship": "r1"}, "no relationship 'r1'", "none"),
        (
            {"type": "complete_objective", "thread": "heist", "objective": "o1"},
            "no thread 'heist'",
            "rescue (Rescue Gwen)",
        ),
        (
            {"type": "complete_objective", "thread": "rescue", "objective": "o9"},
            "no objective 'o9'",
            "o1 (Find the key)",
        ),
        (
            {"type": "create_entity", "name": "gwen", "kind": "person"},
            "already names Gwen (gwen)",
            "Refer to",
        ),
        (
            {"type": "create_entity", "name": "Oda", "kind": "person", "id": "camp"},
            "id 'camp' is taken",
            "unused id",
        ),
    ],
)
def test_reference_refusals_name_what_exists(doc, rules, event, reason, correction):
    new, o = one(doc, rules, event)
    assert (o.status, o.layer) == ("rejected", "reference"), o
    assert reason in o.reason and correction in o.correction, (o.reason, o.correction)
    assert new.to_json() == doc.to_json()


def test_names_resolve_case_insensitively_with_aliases_and_articles(doc, rules):
    for ref in ("gwen", "GWEN", "Gwen", "the ranger", "Ranger", "  the   RANGER "):
        _, o = one(doc, rules, {"type": "set_status", "entity": ref, "status": "tired"})
        assert (o.status, o.target) == ("applied", "gwen.status"), ref
    _, o = one(doc, rules, {"type": "set_conditions", "entity": "you", "add": ["tired"]})
    assert o.target == "player.conditions"


def test_canon_forbids_status_changes(doc, rules):
    new, o = one(doc, rules, {"type": "set_status", "entity": "gwen", "status": "dead"})
    assert o.status == "applied"
    for authority in ("story", "player"):
        after, o = one(
            new,
            rules,
            {"type": "set_status", "entity": "gwen", "status": "Alive"},
            turn=2,
            authority=authority,
        )
        assert (o.status, o.layer) == ("rejected", "canon")
        assert "'dead' to 'Alive'" in o.reason and "Gwen is dead" in o.correction
        assert after.entities["gwen"].status == "dead"


# --- a rejected event changes nothing; the rest still apply --------------------------------


def test_rejected_events_change_nothing_and_the_rest_apply(doc, rules):
    new, report = run(
        doc,
        rules,
        {"type": "change_stat", "stat": "player.hp", "by": -10},
        {"type": "heal"},
        {"type": "set_possession", "item": "sword", "holder": "player"},
        {"type": "set_flag", "flag": "alarm_raised", "value": True},
    )
    assert [o.status for o in report.outcomes] == ["applied", "rejected", "rejected", "applied"]
    assert [o.index for o in report.outcomes] == [0, 1, 2, 3]
    assert (
        stat(new, "player.hp") == 90 and new.flags["alarm_raised"] and "sword" not in new.entities
    )


def test_events_apply_in_order_so_a_new_entity_can_be_used_at_once(doc, rules):
    new, report = run(
        doc,
        rules,
        {"type": "create_entity", "name": "Silver Dagger", "kind": "thing"},
        {"type": "set_possession", "item": "silver dagger", "holder": "you"},
        {"type": "create_entity", "name": "Silver Dagger", "kind": "thing"},
    )
    assert [o.status for o in report.outcomes] == ["applied", "applied", "rejected"]
    assert new.possessions["silver_dagger"] == PLAYER_ID


def test_the_input_document_is_never_mutated(doc, rules):
    before = doc.to_json()
    run(
        doc,
        rules,
        {"type": "change_stat", "stat": "player.hp", "by": -10},
        {"type": "set_conditions", "entity": "gwen", "add": ["bound"]},
        {"type": "set_attribute", "entity": "gwen", "attribute": "mood", "value": "angry"},
        {"type": "set_scene", "present": ["gwen"]},
        {"type": "note_event", "text": "x"},
        {"type": "withdraw_fact", "fact": "f1"},
        {"type": "complete_objective", "thread": "rescue", "objective": "o1"},
    )
    assert doc.to_json() == before


# --- every event type applies -----------------------------------------------------------


def test_entity_events(doc, rules):
    new, report = run(
        doc,
        rules,
        {
            "type": "create_entity",
            "name": "Oda Fenn",
            "kind": "person",
            "aliases": ["harbourmaster"],
            "description": "Keeps the docks.",
            "status": "wary",
            "location": "road",
        },
        {"type": "set_attribute", "entity": "Oda Fenn", "attribute": "bribes", "value": 3},
        {"type": "set_conditions", "entity": "harbourmaster", "add": ["soaked", "cold"]},
        {"type": "set_conditions", "entity": "oda_fenn", "remove": ["SOAKED"]},
        {"type": "set_location", "entity": "oda_fenn", "location": "Bandit Camp"},
        {"type": "set_attribute", "entity": "oda_fenn", "attribute": "bribes", "value": None},
    )
    assert all(o.status == "applied" for o in report.outcomes), report.outcomes
    oda = new.entities["oda_fenn"]
    assert (oda.type, oda.status, oda.conditions, oda.location, oda.attributes) == (
        "person",
        "wary",
        ["cold"],
        "camp",
        {},
    )


def test_locations_and_possessions_cannot_loop(doc, rules):
    new, o = one(doc, rules, {"type": "set_location", "entity": "road", "location": "camp"})
    assert o.status == "applied"
    _, o = one(new, rules, {"type": "set_location", "entity": "camp", "location": "road"})
    assert (o.status, o.layer) == ("rejected", "rules") and "inside" in o.reason
    _, o = one(doc, rules, {"type": "set_possession", "item": "key", "holder": "key"})
    assert o.status == "rejected"
    _, o = one(doc, rules, {"type": "set_possession", "item": "you", "holder": "gwen"})
    assert o.status == "rejected" and "cannot be held" in o.reason
    new, _ = one(doc, rules, {"type": "set_possession", "item": "gwen", "holder": "brannoc"})
    _, o = one(new, rules, {"type": "set_possession", "item": "brannoc", "holder": "gwen"})
    assert o.status == "rejected"


def test_possession_has_one_holder_structurally(doc, rules):
    new, o = one(doc, rules, {"type": "set_possession", "item": "rusty key", "holder": "player"})
    assert (o.before, o.after, new.possessions["key"]) == ("brannoc", PLAYER_ID, PLAYER_ID)
    new, o = one(new, rules, {"type": "clear_possession", "item": "key"})
    assert o.status == "applied" and "key" not in new.possessions
    _, o = one(new, rules, {"type": "clear_possession", "item": "key"})
    assert o.status == "applied" and o.before is None


def test_facts_are_added_deduplicated_and_withdrawn_but_kept(doc, rules):
    new, o = one(
        doc,
        rules,
        {
            "type": "add_fact",
            "subject": "brannoc",
            "predicate": "owes",
            "object": "you 10 gold",
            "value": 10,
        },
        turn=3,
    )
    assert o.target == "fact f2"
    fact = new.facts[-1]
    assert (fact.subject, fact.authority, fact.turn, fact.status) == (
        "brannoc",
        "story",
        3,
        "active",
    )
    _, o = one(
        new,
        rules,
        {
            "type": "add_fact",
            "subject": "Brannoc Thane",
            "predicate": "OWES",
            "object": "you 10 gold",
            "value": 10,
        },
    )
    assert o.status == "applied" and "already established as f2" in o.reason
    new, o = one(new, rules, {"type": "withdraw_fact", "fact": "f2", "reason": "paid"}, turn=4)
    fact = new.facts[-1]
    assert (fact.status, fact.withdrawn_turn, fact.withdrawn_by, fact.withdrawn_reason) == (
        "withdrawn",
        4,
        "story",
        "paid",
    )
    assert len(new.facts) == 2


def test_a_player_fact_outranks_the_story(doc, rules):
    new, o = one(
        doc,
        rules,
        {"type": "add_fact", "subject": "gwen", "predicate": "is", "object": "my sister"},
        authority="player",
    )
    assert new.facts[-1].authority == "player"
    after, o = one(new, rules, {"type": "withdraw_fact", "fact": "f2"}, turn=2)
    assert (o.status, o.layer) == ("rejected", "rules") and "established by the player" in o.reason
    assert after.facts[-1].status == "active"
    _, o = one(
        new, rules, {"type": "withdraw_fact", "fact": "f1"}, turn=2
    )  # canon outranks the story
    assert o.status == "rejected"
    after, o = one(new, rules, {"type": "withdraw_fact", "fact": "f1"}, turn=2, authority="player")
    assert o.status == "applied" and after.facts[0].withdrawn_by == "player"


def test_relationships(doc, rules):
    new, o = one(
        doc,
        rules,
        {"type": "add_relationship", "source": "gwen", "kind": "ally of", "target": "you"},
    )
    assert o.target == "relationship r1" and new.relationships[0].target == PLAYER_ID
    _, o = one(
        new,
        rules,
        {"type": "add_relationship", "source": "gwen", "kind": "Ally of", "target": "player"},
    )
    assert o.status == "applied" and "already related" in o.reason
    _, o = one(
        new,
        rules,
        {"type": "add_relationship", "source": "gwen", "kind": "likes", "target": "gwen"},
    )
    assert o.status == "rejected"
    new, o = one(new, rules, {"type": "end_relationship", "relationship": "r1"}, turn=5)
    assert (new.relationships[0].status, new.relationships[0].ended_turn) == ("ended", 5)
    mine, _ = one(
        doc,
        rules,
        {"type": "add_relationship", "source": "you", "kind": "sworn to", "target": "gwen"},
        authority="player",
    )
    _, o = one(mine, rules, {"type": "end_relationship", "relationship": "r1"})
    assert o.status == "rejected"


def test_threads_and_objectives(doc, rules):
    new, o = one(
        doc,
        rules,
        {
            "type": "open_thread",
            "title": "The Missing Ledger",
            "kind": "quest",
            "objectives": ["Ask Oda", "Find the thief"],
        },
        turn=2,
    )
    thread = new.threads["the_missing_ledger"]
    assert (thread.kind, thread.opened, [x.id for x in thread.objectives]) == (
        "quest",
        2,
        ["o1", "o2"],
    )
    _, o = one(new, rules, {"type": "open_thread", "title": "the missing ledger"})
    assert o.status == "applied" and "already open" in o.reason
    new, o = one(
        new,
        rules,
        {
            "type": "complete_objective",
            "thread": "The Missing Ledger",
            "objective": "find the thief",
        },
        turn=3,
    )
    assert (
        o.status == "applied" and thread.objectives[1].done is False
    )  # the input stayed as it was
    assert new.threads["the_missing_ledger"].objectives[1].done
    new, o = one(
        new,
        rules,
        {
            "type": "resolve_thread",
            "thread": "the_missing_ledger",
            "outcome": "failed",
            "note": "burned",
        },
        turn=4,
    )
    assert (new.threads["the_missing_ledger"].status, new.threads["the_missing_ledger"].closed) == (
        "failed",
        4,
    )
    _, o = one(
        new,
        rules,
        {"type": "resolve_thread", "thread": "the_missing_ledger", "outcome": "resolved"},
    )
    assert o.status == "rejected" and "already failed at turn 4" in o.reason
    _, o = one(
        new,
        rules,
        {"type": "complete_objective", "thread": "the_missing_ledger", "objective": "o1"},
    )
    assert o.status == "rejected"


def test_scene(doc, rules):
    new, o = one(
        doc,
        rules,
        {
            "type": "set_scene",
            "location": "north road",
            "present": ["Gwen", "gwen"],
            "time": "night",
            "summary": "Fleeing.",
        },
    )
    assert new.scene.model_dump() == {
        "location": "road",
        "present": ["gwen"],
        "time": "night",
        "summary": "Fleeing.",
    }
    new, o = one(new, rules, {"type": "set_scene", "present": []})
    assert new.scene.present == [] and new.scene.time == "night"
    _, o = one(new, rules, {"type": "set_scene", "present": ["ghost"]})
    assert o.status == "rejected" and o.layer == "reference"


def test_flags_go_both_ways(doc, rules):
    new, o = one(doc, rules, {"type": "set_flag", "flag": "has_key", "value": True})
    assert new.flags["has_key"] and o.status == "applied"
    new, o = one(new, rules, {"type": "set_flag", "flag": "has_key", "value": False}, turn=2)
    assert not new.flags["has_key"] and o.status == "applied"


def test_recent_events_keep_a_window_of_five(doc, rules):
    new = doc
    for turn in range(1, 8):
        new, _ = one(new, rules, {"type": "note_event", "text": f"event {turn}"}, turn=turn)
    assert [e.text for e in new.recent_events] == [f"event {t}" for t in range(3, 8)]


def test_moments_are_append_only_and_weighted(doc, rules):
    new, _ = run(
        doc,
        rules,
        {"type": "record_moment", "text": "Fell in the mud", "weight": 3},
        {"type": "record_moment", "text": "Fell in the mud", "weight": 3},
        turn=2,
    )
    assert [(m.id, m.weight, m.turn) for m in new.moments] == [("m1", 3, 2), ("m2", 3, 2)]


def test_player_authority_is_checked(doc, rules):
    with pytest.raises(ValueError):
        apply_proposal(doc, {"events": []}, rules, 1, authority="canon")


def test_report_serialises(doc, rules):
    _, report = run(
        doc, rules, {"type": "change_stat", "stat": "player.hp", "by": -50}, {"type": "heal"}
    )
    data = report.to_json()
    assert data["turn"] == 1 and data["authority"] == "story"
    assert [o["status"] for o in data["outcomes"]] == ["limited", "rejected"]


def test_an_old_document_without_a_declared_stat_uses_its_initial(rules):
    doc = initial_document(rules)
    del doc.stats.npcs["gwen"]["trust"]
    new, o = one(doc, rules, {"type": "change_stat", "stat": "npc.gwen.trust", "by": 5})
    assert (o.before, o.after, stat(new, "npc.gwen.trust")) == (20, 25, 25)
