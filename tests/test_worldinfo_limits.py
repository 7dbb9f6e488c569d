"""Story cards at their limits, through the prompt assembly (what Insights shows): the
overall card budget and the timers of the cards it cuts, the recursion depth, inclusion
groups decided after recursion, and a regex key cut off for backtracking."""

from __future__ import annotations

import asyncio

from talekeeper.context.cardspec import StoryCard
from talekeeper.context.prompt import (
    Assembly,
    ContextInput,
    ContextOptions,
    HistoryTurn,
    assemble,
    completion_request,
)
from talekeeper.context.worldinfo import Part, select


async def words(text: str) -> int:
    return len(text.split())


def build(
    cards: list[dict], action: str, *, turn: int = 5, last: dict[int, int] | None = None, **options
) -> Assembly:
    inputs = ContextInput(
        plot={"story_cards": cards},
        history=[HistoryTurn("do", "look around", "The harbour is quiet.", 1, turn - 1)],
        action_kind="do",
        action_text=action,
        options=ContextOptions(budget=4000, history_step=1, **options),
        turn=turn,
        seed="adventure:head",
        card_last_fired=last or {},
    )
    return asyncio.run(assemble(inputs, words))


def cards_in(assembly: Assembly) -> dict[str, tuple[bool, str]]:
    section = assembly.section("story_cards")
    return {i.key: (i.included, i.why) for i in section.items} if section else {}


TEN = "one two three four five six seven eight nine"  # a line "World lore: X …" is 12 words

LORE = [
    {"name": "Harbour", "entry": f"Harbour {TEN}", "constant": True, "order": 300},
    {"name": "Bell", "entry": f"Bell {TEN}", "triggers": "bell", "sticky": 3, "order": 200},
    {"name": "Gull", "entry": f"Gull {TEN}", "triggers": "bell", "cooldown": 2, "order": 100},
]


def test_the_overall_card_budget_cuts_by_priority_and_insights_names_the_cut() -> None:
    done = build(LORE, "ring the bell", card_budget=12)
    seen = cards_in(done)
    assert seen["Harbour"][0] and not seen["Bell"][0] and not seen["Gull"][0]
    for name in ("Bell", "Gull"):
        assert "dropped by the overall budget: 12 of 12 tokens used, it needs 12" in seen[name][1]
        assert "story-card budget of 12 tokens" in seen[name][1]
    assert any("cut by the overall card budget" in n and "'Bell', 'Gull'" in n for n in done.notes)
    prompt = completion_request(done).prompt
    assert "Harbour one" in prompt and "Bell one" not in prompt and "Gull one" not in prompt
    assert done.cards_fired == [0]  # only what was sent counts as fired for the timers
    # The share still applies beneath a larger cap: 20% of 4000 is 800, so all three fit.
    assert all(
        included
        for included, _ in cards_in(build(LORE, "ring the bell", card_budget=5000)).values()
    )


def test_a_card_cut_by_the_budget_starts_neither_sticky_nor_cooldown() -> None:
    cut = build(LORE, "ring the bell", card_budget=12)
    last = {i: 5 for i in cut.cards_fired}  # what the turn's record keeps for the timers
    # Next turn, no bell and room for all: Bell was never sent, so it is not held on.
    after = cards_in(build(LORE, "wait", turn=6, last=last))
    assert "Bell" not in after or not after["Bell"][0]
    # ... and the bell again: Gull was never sent, so it is not cooling down.
    again = cards_in(build(LORE, "ring the bell", turn=6, last=last))
    assert again["Gull"][0] and "cooling down" not in again["Gull"][1]
    # Had they been sent, the same timers would hold: the test sees the difference.
    sent = {0: 5, 1: 5, 2: 5}
    assert cards_in(build(LORE, "wait", turn=6, last=sent))["Bell"][0]
    assert "cooling down" in cards_in(build(LORE, "ring the bell", turn=6, last=sent))["Gull"][1]


CHAIN = [
    {"name": f"c{i}", "entry": f"lore of k{i + 1}", "triggers": f"k{i}", "order": 100 - i}
    for i in range(5)
]


def test_recursion_stops_at_the_configured_depth_and_says_what_it_held_back() -> None:
    for depth in (0, 1, 2, 3):
        done = build(CHAIN, "say k0", recursion_depth=depth)
        sent = [name for name, (included, _) in cards_in(done).items() if included]
        assert sent == [f"c{i}" for i in range(depth + 1)]
        limit = [n for n in done.notes if n.startswith("Recursion stopped")]
        if depth == 0:
            assert limit == []  # recursion off is not a limit reached
        else:
            assert limit == [
                f"Recursion stopped at its depth limit ({depth}): trigger 'k{depth + 1}' in card 'c{depth}''s text "
                f"would have brought in 'c{depth + 1}'."
            ]
    deepest = cards_in(build(CHAIN, "say k0", recursion_depth=3))["c3"][1]
    assert "trigger 'k3' in card 'c2''s text (recursion level 3)" in deepest
    # When the chain ends before the limit, nothing is said.
    assert not [
        n for n in build(CHAIN, "say k0", recursion_depth=10).notes if n.startswith("Recursion")
    ]


def test_inclusion_groups_are_decided_after_recursion() -> None:
    """A card brought in by recursion competes in its group: with group_override and a
    higher order it beats the card that fired by its own key, and loses when lower."""
    cards = [
        {
            "name": "Storm",
            "entry": "A storm brews over the lighthouse.",
            "triggers": "storm",
            "group": "weather",
            "order": 100,
        },
        {
            "name": "Lighthouse",
            "entry": "The lighthouse stands dark.",
            "triggers": "lighthouse",
            "group": "weather",
            "group_override": True,
            "order": 500,
        },
    ]
    seen = cards_in(build(cards, "watch the storm"))
    assert seen["Lighthouse"][0] and "recursion level 1" in seen["Lighthouse"][1]
    assert not seen["Storm"][0] and "lost group 'weather' to 'Lighthouse'" in seen["Storm"][1]
    cards[0]["group_override"], cards[0]["order"] = True, 900
    seen = cards_in(build(cards, "watch the storm"))
    assert seen["Storm"][0] and not seen["Lighthouse"][0]
    assert "lost group 'weather' to 'Storm'" in seen["Lighthouse"][1]
    # Engine-level: with weights alone, over many seeds, each wins sometimes — never both.
    plain = [StoryCard(**{**c, "group_override": False}) for c in cards]
    winners = set()
    for n in range(40):
        sel = select(plain, [Part.of("your action", "watch the storm", 0)], turn=1, seed=str(n))
        assert len(sel.fired) == 1
        winners.add(sel.fired[0].name)
    assert winners == {"Storm", "Lighthouse"}


def test_a_regex_that_would_backtrack_forever_is_cut_off_with_a_note_in_insights() -> None:
    cards = [
        {"name": "Evil", "entry": "Never sent.", "triggers": "/(a|aa)+$/"},
        {"name": "Lamp", "entry": "The lamp gutters.", "triggers": "lamp"},
    ]
    done = build(cards, "light the lamp " + "a" * 60 + "!")
    seen = cards_in(done)
    assert seen["Lamp"][0] and not seen["Evil"][0]
    assert "regex key /(a|aa)+$/ was cut off (ran past its time limit)" in seen["Evil"][1]
    assert any(
        n.startswith("Regex key(s) cut off after 20 ms on a text: /(a|aa)+$/") for n in done.notes
    )


def test_a_card_the_current_action_names_outranks_older_mentions() -> None:
    """Under a tight budget the card the player's action names is sent, not one only the
    opening narration named (the same order)."""
    lore = [
        {"name": "Harbour", "entry": f"Harbour {TEN}", "triggers": "harbour"},
        {"name": "Lantern", "entry": f"Lantern {TEN}", "triggers": "lantern"},
    ]
    done = build(lore, "raise the lantern", card_budget=12)
    seen = cards_in(done)
    assert seen["Lantern"][0] and not seen["Harbour"][0]
    # Even above a higher order; among cards older text named, order ranks.
    ranked = [
        {**lore[0], "order": 500},
        lore[1],
        {"name": "Quiet", "entry": f"Quiet {TEN}", "triggers": "quiet", "order": 50},
    ]
    seen = cards_in(build(ranked, "raise the lantern", card_budget=24))
    assert seen["Lantern"][0] and seen["Harbour"][0] and not seen["Quiet"][0]


def test_a_large_book_stops_early_instead_of_firing_everything() -> None:
    """Every card names the next: with a budget for a few, the cards past the budget are
    held back and recursion stops, named in the notes; nothing is fired to be dropped."""
    chain = [
        {
            "name": f"Link {i}",
            "entry": f"link{i} " + "lore " * 400 + f"link{i + 1}",
            "triggers": f"link{i}",
        }
        for i in range(60)
    ]
    parts = [Part.of("your action", "follow link0", 0)]
    cards = [StoryCard.model_validate(c) for c in chain]
    unbounded = select(cards, parts, turn=1, seed="s", recursion_depth=100)
    assert len(unbounded.fired) == 60
    bounded = select(cards, parts, turn=1, seed="s", recursion_depth=100, budget_tokens=300)
    assert 1 <= len(bounded.fired) <= 6
    assert any("Recursion stopped early" in n for n in bounded.notes)
    assert len(bounded.decisions) < 12
    # Through the prompt: a few decided, those that fit sent (104 words each).
    short = [{**c, "entry": c["entry"].replace("lore " * 400, "lore " * 100)} for c in chain]
    done = build(short, "follow link0", card_budget=300, recursion_depth=100)
    items = done.section("story_cards").items
    assert [i.key for i in items if i.included] == ["Link 0", "Link 1"]
    assert len(items) < 20 and any("Recursion stopped early" in n for n in done.notes)


def test_regex_keys_past_the_turns_allowance_are_named() -> None:
    import talekeeper.context.worldinfo as worldinfo

    slow = [StoryCard(name=f"Slow {i}", entry="x", triggers=f"/(x|xx)+y{i}$/") for i in range(3)]
    text = "x" * 40 + "!"
    original = worldinfo.REGEX_TURN_BUDGET
    worldinfo.REGEX_TURN_BUDGET = 1
    worldinfo._REGEX_SEEN.clear()
    try:
        chosen = select(slow, [Part.of("your action", text, 0)], turn=1, seed="s")
    finally:
        worldinfo.REGEX_TURN_BUDGET = original
        worldinfo._REGEX_SEEN.clear()
    assert any(n.startswith("Regex key(s) cut off") for n in chosen.notes)
    assert any("not tried this turn" in n and "/(x|xx)+y2$/" in n for n in chosen.notes)
