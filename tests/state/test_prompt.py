"""Text for the model: the vocabulary, the stat guide, the state, last turn's refusals."""

from __future__ import annotations

import re

from talekeeper.state import (
    EVENTS,
    apply_proposal,
    canon_prompt,
    empty_rules,
    initial_document,
    refusals_for_prompt,
    stat_guide,
    state_for_prompt,
    vocabulary_prompt,
)
from talekeeper.state import events as events_module


def test_the_vocabulary_is_generated_from_the_allowlist(monkeypatch):
    text = vocabulary_prompt()
    for spec in EVENTS.values():
        line = next(line for line in text.splitlines() if line.startswith(f"- {spec.type} "))
        for field in spec.fields:
            assert re.search(rf"\b{field.name}\??[,}}]", line), (spec.type, field.name)
    extra = events_module.EventSpec(
        "ring_bell", "ring a bell", (events_module.Field("bell", "name"),), {"bell": "x"}
    )
    monkeypatch.setitem(EVENTS, "ring_bell", extra)
    assert "- ring_bell {bell}: ring a bell." in vocabulary_prompt()


def test_the_vocabulary_is_compact_and_stable():
    assert vocabulary_prompt() == vocabulary_prompt()
    assert len(vocabulary_prompt()) < 4000


def test_the_stat_guide_gives_every_ladder_but_no_hidden_number(rules):
    guide = stat_guide(rules)
    assert "- player.hp: Hit points; 0 to 100; 0 to 20 very weak · 20 to 40 hurt" in guide
    assert "moves at most 30 per turn" in guide and "then rests 2 turns" in guide
    assert "- world.day: In-game day; at least 1; counter: only rises" in guide
    luck = next(line for line in guide.splitlines() if line.startswith("- player.luck"))
    assert "cursed < ordinary < blessed" in luck and not re.search(r"\d", luck)
    assert "- flag has_key: Player holds the dungeon key" in guide
    assert stat_guide(empty_rules()) == ""


def test_canon_is_stated(rules):
    assert (
        canon_prompt(rules)
        == "Canon:\n- Magic is rare and feared.\n- Nothing goes from 'dead' to any status."
    )
    assert canon_prompt(empty_rules()) == ""


def test_state_names_every_id_path_and_band(doc, rules):
    text = state_for_prompt(doc, rules)
    assert "Scene: Bandit Camp (camp), dusk. Present: Gwen (gwen), Brannoc Thane (brannoc)." in text
    assert "player.hp 100/100 (full health)" in text
    assert "npc.gwen.trust 20/100 (wary)" in text
    assert "world.day 1" in text
    assert "Goals (mark with reach_milestone): rescue_gwen — Rescue Gwen from the bandits" in text
    assert "Flags: has_key off, alarm_raised off" in text
    assert "- rescue (quest): Rescue Gwen — o1 Find the key; o2 Free Gwen" in text
    assert "- f1: Gwen is captive of the bandits" in text
    assert "Brannoc Thane (brannoc, person) — alive — at Bandit Camp — holds rusty key" in text
    assert "Elsewhere: North Road (road), Gate Guard (guard_1), Tower Guard (guard_2)" in text


def test_hidden_stats_show_only_their_label(doc, rules):
    for value, label in ((0, "cursed"), (5, "ordinary"), (10, "blessed")):
        doc.stats.player["luck"].value = value
        shown = re.search(r"player\.luck ([^,\n]*)", state_for_prompt(doc, rules)).group(1)
        assert shown == label


def test_only_in_scene_npcs_show_their_stats(doc, rules):
    doc.scene.present = []
    text = state_for_prompt(doc, rules, in_scene_ids=["gwen"])
    assert "npc.gwen.trust" in text and "npc.brannoc.trust" not in text
    assert "npc." not in state_for_prompt(doc, rules, in_scene_ids=[])


def test_scene_present_counts_as_in_scene(doc, rules):
    """Whoever the scene says is present is in scene even when the recent text never
    names them (Greywater's opening calls Maren "a woman in an oilskin coat")."""
    doc.scene.present = ["brannoc"]
    doc.entities["brannoc"].description = "A scarred sellsword with a limp."
    text = state_for_prompt(doc, rules, in_scene_ids=[])
    assert "npc.brannoc.trust" in text and "npc.gwen.trust" not in text
    assert (
        "A scarred sellsword with a limp." in text
    )  # an in-scene NPC's description reaches the narrator
    doc.scene.present = []
    assert "A scarred sellsword" not in state_for_prompt(doc, rules, in_scene_ids=[])


def test_milestones_move_from_goals_to_achieved(doc, rules):
    new, _ = apply_proposal(
        doc, {"events": [{"type": "reach_milestone", "milestone": "rescue_gwen"}]}, rules, 1
    )
    text = state_for_prompt(new, rules)
    assert "Achieved: rescue_gwen — Rescue Gwen from the bandits" in text
    assert "Goals (mark with reach_milestone): reach_capital" in text


def test_player_facts_are_marked_and_withdrawn_facts_named(doc, rules):
    new, _ = apply_proposal(
        doc,
        {
            "events": [
                {"type": "add_fact", "subject": "gwen", "predicate": "is", "object": "my sister"}
            ]
        },
        rules,
        1,
        "player",
    )
    new, _ = apply_proposal(
        new,
        {"events": [{"type": "withdraw_fact", "fact": "f1", "reason": "she escaped"}]},
        rules,
        2,
        "player",
    )
    text = state_for_prompt(new, rules)
    assert "- f2: Gwen is my sister [set by the player; it stands]" in text
    assert "No longer true:\n- f1: Gwen is captive of the bandits (she escaped)" in text


def test_a_plain_adventure_shows_little():
    rules = empty_rules()
    text = state_for_prompt(initial_document(rules), rules)
    assert text.startswith("Scene: unknown.") and "stats" not in text and "Goals" not in text


# --- refusals ---------------------------------------------------------------------------


def test_refusals_carry_rejected_and_unchanged_but_not_limited(doc, rules):
    _, report = apply_proposal(
        doc,
        {
            "events": [
                {"type": "change_stat", "stat": "player.hp", "by": -50},  # limited
                {"type": "change_stat", "stat": "npc.gwen.health", "by": 30},  # limited: 80 -> 100
                {"type": "change_stat", "stat": "npc.gwen.health", "by": 5},  # unchanged: at max
                {"type": "change_stat", "stat": "world.day", "by": -1},  # rejected: counter
                {"type": "change_stat", "stat": "npc.bob.trust", "by": 5},  # rejected: unknown NPC
                {"type": "heal"},  # rejected: allowlist
            ]
        },
        rules,
        1,
    )
    assert [o.status for o in report.outcomes] == [
        "limited",
        "limited",
        "unchanged",
        "rejected",
        "rejected",
        "rejected",
    ]
    text = refusals_for_prompt(report)
    assert "player.hp" not in text and '"by":30' not in text
    assert (
        '- {"type":"change_stat","stat":"npc.gwen.health","by":5}: no change — at its limit: '
        in text
    )
    assert "npc.gwen.health is already at its maximum (100)" in text
    assert "world.day is a counter and never falls" in text and "positive amount" in text
    assert "Gwen (gwen), Brannoc Thane (brannoc)" in text
    assert "'heal' is not an event type" in text
    assert len(text.splitlines()) == 5


def test_no_refusals_no_text(doc, rules):
    _, report = apply_proposal(
        doc, {"events": [{"type": "change_stat", "stat": "player.hp", "by": -50}]}, rules, 1
    )
    assert refusals_for_prompt(report) == ""


def test_an_envelope_refusal_is_fed_back(doc, rules):
    _, report = apply_proposal(doc, {"player.hp": -15}, rules, 1)
    text = refusals_for_prompt(report)
    assert '- the state block: refused: the state block has no "events" list.' in text


def test_a_hidden_refusal_quotes_no_number(doc, rules):
    doc.stats.player["luck"].value = 10
    _, report = apply_proposal(
        doc, {"events": [{"type": "change_stat", "stat": "player.luck", "by": 1}]}, rules, 1
    )
    text = refusals_for_prompt(report)
    assert "player.luck is already at its highest ('blessed')" in text
    assert not re.search(r"\d", text.replace('"by":1', ""))


def test_an_unreadable_block_is_fed_back():
    text = refusals_for_prompt(None, "the state block could not be read as JSON")
    assert text.splitlines()[1].startswith(
        "- the state block: the state block could not be read as JSON;"
    )
    assert refusals_for_prompt(None) == ""


def test_the_scene_header_and_the_stats_follow_their_own_sources(doc, rules):
    doc.scene.present = ["gwen"]
    text = state_for_prompt(doc, rules, in_scene_ids=["brannoc"])
    assert (
        "Present: Gwen (gwen)." in text
    )  # the header is the scene's; stats follow who is in scene
    assert "npc.gwen.trust" in text and "npc.brannoc.trust" in text
