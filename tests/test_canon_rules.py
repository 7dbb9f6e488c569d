"""Behaviour the canon rests on, each pinned so that breaking it fails a test (issue 23
item 5): moments fade with the turns since (and a companion raises the strongest now); only
moments at the narrator's weight reach the narrator; an NPC's `moves` reach that NPC's own
call and no other; a scenario that rolls its character's stats rolls them."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures
from talekeeper.state import load_rules, state_notes
from talekeeper.state.canon import (
    BANTER_MIN_SCORE,
    MOMENT_HALF_LIFE,
    NARRATOR_MOMENT_WEIGHT,
    banter_moment,
    moment_score,
    narrator_moments,
)
from talekeeper.state.creation import CreationError, create_character
from talekeeper.state.document import Moment
from talekeeper.state.initial import initial_document
from tests.test_worlds import FENMOUTH, prompt_of, start, turn


def test_a_moment_fades_by_half_every_half_life() -> None:
    assert moment_score(8, 10, 10) == 8
    assert moment_score(8, 10, 10 + MOMENT_HALF_LIFE) == pytest.approx(4)
    assert moment_score(8, 10, 10 + 2 * MOMENT_HALF_LIFE) == pytest.approx(2)
    assert moment_score(8, 10, 5) == 8  # (a moment never counts for more than its weight)
    scores = [moment_score(10, 0, t) for t in range(0, 100, 7)]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0  # fades, never vanishes


def test_the_companion_raises_the_strongest_moment_now_not_the_heaviest_ever() -> None:
    document = initial_document(load_rules({}))
    document.moments += [
        Moment(id="m1", text="you fell in the river", weight=10, turn=1),
        Moment(id="m2", text="you lost the bet", weight=4, turn=40),
    ]
    assert banter_moment(document, 2).text == "you fell in the river"
    # 41 turns on, the heavy one counts 10 / 2^(40/12) ≈ 1, under the light, recent one
    assert banter_moment(document, 41).text == "you lost the bet"
    # and long after both, neither is strong enough to raise at all
    late = 41 + 4 * MOMENT_HALF_LIFE
    assert all(moment_score(m.weight, m.turn, late) < BANTER_MIN_SCORE for m in document.moments)
    assert banter_moment(document, late) is None
    # the narrator's heavy moments come strongest first, by the same fading
    document.moments.append(Moment(id="m3", text="you saved the ferry", weight=8, turn=40))
    assert narrator_moments(document, 41) == ["you saved the ferry", "you fell in the river"]


def test_only_moments_at_the_narrators_weight_reach_the_narrator() -> None:
    rules = load_rules({})
    document = initial_document(rules)
    document.moments += [
        Moment(id="m1", text="you dropped the lamp", weight=NARRATOR_MOMENT_WEIGHT, turn=1),
        Moment(id="m2", text="you sneezed in church", weight=NARRATOR_MOMENT_WEIGHT - 1, turn=1),
    ]
    notes = state_notes(document, rules, None, turn=2)
    assert "Not forgotten: you dropped the lamp." in notes
    assert "sneezed" not in notes


def test_a_played_moment_reaches_the_narrator_only_when_heavy_enough(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    import json

    aid = start(client, "deserter", **{"class": "sellsword"})["id"]
    moments = {
        "events": [
            {"type": "record_moment", "text": "you kicked a gull", "weight": 6},
            {"type": "record_moment", "text": "you fell off the barge", "weight": 7},
        ]
    }
    scripted.queue("Gulls scatter.\n```state\n" + json.dumps(moments) + "\n```", "Fog.")
    turn(client, aid, "do", "step off the barge")
    turn(client, aid, "do", "look around")
    narrator = prompt_of(scripted.requests[-1])
    assert "Not forgotten: you fell off the barge." in narrator
    assert "kicked a gull" not in narrator


def test_an_npcs_moves_reach_their_own_call_and_no_other(
    client: TestClient, scripted: ScriptedProvider
) -> None:
    aid = start(client, "deserter", **{"class": "assassin"})["id"]
    scripted.queue('"Stolen," Oda says.', "The tide turns.")
    turn(client, aid, "talk", "what happened to the ledger?", to="Oda Fenn")
    oda = prompt_of(scripted.requests[-1])
    turn(client, aid, "do", "walk along the quay")
    narrator = prompt_of(scripted.requests[-1])
    moves = [
        "insist the ledger was stolen and blame 'river rats'",
        "offer the player coin to drop the matter",
        "admit the truth only to someone she trusts, and beg them to keep it quiet",
    ]
    assert "What Oda Fenn may do in this conversation:" in oda
    assert all(f"- {move}" in oda for move in moves), oda
    assert not any(move in narrator for move in moves)
    assert "tease the player about a past embarrassment" not in oda  # Brannoc's, not hers


ROLLED = {
    "stats": {
        "player": {
            "brawn": {"min": 3, "max": 18, "initial": 3},
            "nerve": {"min": 5, "max": 12, "initial": 5},
        }
    },
    "character": {"method": "roll", "dice": 3, "sides": 6, "stats": ["brawn", "nerve"]},
}


def test_a_rolled_character_rolls_each_stat_with_its_dice_clamped_to_its_range() -> None:
    for seed in range(40):
        made = create_character(ROLLED, None, {"name": "Ines"}, random.Random(seed))
        dice = random.Random(seed)
        brawn = sum(dice.randint(1, 6) for _ in range(3))
        nerve = min(12, max(5, sum(dice.randint(1, 6) for _ in range(3))))
        assert made.stats == {"brawn": brawn, "nerve": nerve}, seed
    values = {
        create_character(ROLLED, None, {"name": "I"}, random.Random(s)).stats["brawn"]
        for s in range(200)
    }
    assert min(values) >= 3 and max(values) <= 18 and len(values) > 8  # really rolled
    with pytest.raises(CreationError, match="rolls its stats; they cannot be chosen"):
        create_character(ROLLED, None, {"name": "I", "stats": {"brawn": 18}}, random.Random(1))


def test_a_rolled_character_starts_the_adventure_with_its_rolls(tk) -> None:
    """Through new-game construction: the stats rolled are the adventure's, in its state."""
    from talekeeper.service import scenarios, state_engine
    from talekeeper.story import tree

    with tk.db.session() as session:
        data = dict(scenarios.get_scenario(session, FENMOUTH).data)
        rules = dict(data["rules"])
        character = {**rules["character"], "method": "roll", "dice": 2, "sides": 3}
        character.pop("points", None)
        rules["character"] = character
        scenarios.create_scenario(session, {**data, "id": "fenmouth-rolled", "rules": rules})
    with tk.db.session() as session:
        adventure = adventures.start_adventure(
            session,
            "fenmouth-rolled",
            origin_id="deserter",
            character={"name": "Ines", "class": "assassin"},
            rng=random.Random(7),
        )
        document = state_engine.document_of(
            tree.head(session, adventure).state, state_engine.rules_of(adventure)
        )
    dice = random.Random(7)
    expected = {
        n: max(1, min(5, dice.randint(1, 3) + dice.randint(1, 3)))
        for n in ("might", "wits", "grace")
    }
    assert {n: document.stats.player[n].value for n in expected} == expected
