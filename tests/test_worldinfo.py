"""Story cards with World Info rules and state gates: the pure engine (no I/O)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.context.cardspec import StoryCard, card_errors, rules_in_words
from talekeeper.context.keys import parse_keys, split_keys
from talekeeper.context.prompt import (
    ContextInput,
    ContextOptions,
    HistoryTurn,
    assemble,
    chat_request,
    completion_request,
)
from talekeeper.context.worldinfo import Part, select

RULES = {
    "flags": {"ferry_hired": {"initial": False}},
    "milestones": {"got_key": {"desc": "Tobin gave the key"}},
    "entities": [
        {"id": "maren", "name": "Maren"},
        {"id": "docks", "name": "Docks"},
        {"id": "pier", "name": "Pier"},
        {"id": "brass_key", "name": "Brass key"},
    ],
    "threads": [{"id": "relight", "title": "Relight the lantern"}],
    "stats": {
        "world": {"storm": {"min": 0, "max": 10, "initial": 4}},
        "npcs": {
            "maren": {
                "trust": {
                    "min": 0,
                    "max": 10,
                    "initial": 3,
                    "bands": [[0, 5, "wary"], [5, 10, "trusting"]],
                }
            }
        },
    },
}
STATE = {
    "flags": {"ferry_hired": True},
    "milestones": {"got_key": None},
    "entities": {
        "player": {"location": "pier"},
        "pier": {"location": "docks"},
        "maren": {"status": "alive"},
    },
    "possessions": {"brass_key": "player"},
    "threads": {"relight": {"status": "open"}},
    "stats": {"world": {"storm": {"value": 6}}, "npcs": {"maren": {"trust": {"value": 7}}}},
}


def card(**kw) -> StoryCard:
    return StoryCard(**{"name": kw.get("name", "c"), "entry": kw.pop("entry", "Some lore."), **kw})


def fired(
    cards, text="", *, turn=5, seed="s", state=STATE, last=None, depth=2, parts=None
) -> list[str]:
    parts = parts if parts is not None else [Part.of("your action", text, 0)]
    sel = select(
        cards,
        parts,
        turn=turn,
        seed=seed,
        state=state,
        rules=RULES,
        last_fired=last or {},
        recursion_depth=depth,
    )
    return [d.name for d in sel.fired]


def test_keys_split_keeps_regex_whole_and_matching_options() -> None:
    assert split_keys("Maren, /ferry(wo)?man,x/i , boat,, boat") == [
        "Maren",
        "/ferry(wo)?man,x/i",
        "boat",
    ]
    assert fired([card(name="a", triggers="boat")], "the BOATS") == [
        "a"
    ]  # partial, any case by default
    assert fired([card(name="a", triggers="boat", whole_words=True)], "the boats") == []
    assert fired([card(name="a", triggers="boat", whole_words=True)], "a boat.") == ["a"]
    assert fired([card(name="a", triggers="Boat", case_sensitive=True)], "a boat") == []
    assert fired([card(name="a", triggers="/ferry(wo)?man/")], "the ferrywoman") == ["a"]
    assert (
        fired([card(name="a", triggers="/FERRY/")], "the ferry") == []
    )  # a regex decides case by its flags
    assert fired([card(name="a", triggers="/FERRY/i")], "the ferry") == ["a"]


@settings(max_examples=400, deadline=None)
@given(
    st.text("ab _.-éÉ1\n", min_size=1, max_size=4),
    st.text("ab _.-éÉ1\n", max_size=30),
    st.booleans(),
)
def test_whole_word_keys_match_as_a_word_boundary_regex_would(key, text, case) -> None:
    """Whole-word matching without a regex agrees with `(?<!\\w)key(?!\\w)` (the boundary
    only where the key itself starts or ends with a word character)."""
    import re

    phrase = " ".join(key.split())
    if not phrase:
        return
    needle = phrase if case else phrase.lower()
    left = r"(?<!\w)" if re.match(r"\w", phrase[0]) else ""
    right = r"(?!\w)" if re.match(r"\w", phrase[-1]) else ""
    expected = (
        re.search(left + re.escape(needle) + right, text if case else text.lower()) is not None
    )
    assert (
        parse_keys(key, case_sensitive=case, whole_words=True)[0].find(text, text.lower())
        == expected
    )


def test_selective_logic() -> None:
    base = dict(triggers="maren", secondary_triggers="boat, oar")
    text = "maren and the boat"
    assert fired([card(name="a", logic="and_any", **base)], text) == ["a"]
    assert fired([card(name="a", logic="and_all", **base)], text) == []
    assert fired([card(name="a", logic="and_all", **base)], text + " oar") == ["a"]
    assert fired([card(name="a", logic="not_any", **base)], text) == []
    assert fired([card(name="a", logic="not_any", **base)], "maren alone") == ["a"]
    assert fired([card(name="a", logic="not_all", **base)], text) == ["a"]
    assert fired([card(name="a", logic="not_all", **base)], text + " oar") == []


def test_scan_depth_per_card() -> None:
    parts = [
        Part.of("your action", "look", 0),
        Part.of("turn 3 (narration)", "a gull", 1),
        Part.of("turn 1 (narration)", "the wreck", 3),
    ]
    assert fired([card(name="a", triggers="wreck")], parts=parts) == [
        "a"
    ]  # default window: 4 turns
    assert fired([card(name="a", triggers="wreck", scan_depth=2)], parts=parts) == []
    assert fired([card(name="a", triggers="gull", scan_depth=1)], parts=parts) == ["a"]
    assert fired([card(name="a", triggers="look", scan_depth=0)], parts=parts) == ["a"]


def test_gates_on_the_state() -> None:
    def gated(*gates) -> list[str]:
        return fired([card(name="g", triggers="", gates=list(gates))], "")

    assert gated({"kind": "flag", "id": "ferry_hired"}) == ["g"]
    assert gated({"kind": "flag", "id": "ferry_hired", "not": True}) == []
    assert gated({"kind": "milestone", "id": "got_key"}) == []
    assert gated({"kind": "location", "id": "docks"}) == ["g"]  # the pier is at the docks
    assert gated({"kind": "location", "id": "docks", "who": "maren"}) == []
    assert gated({"kind": "status", "id": "maren", "is": "Alive"}) == ["g"]
    assert gated({"kind": "stat", "id": "npc.maren.trust", "band": "trusting"}) == ["g"]
    assert gated({"kind": "stat", "id": "npc.maren.trust", "band": "wary"}) == []
    assert gated({"kind": "stat", "id": "world.storm", "min": 7}) == []
    assert gated({"kind": "stat", "id": "world.storm", "min": 3, "max": 6}) == ["g"]
    assert gated({"kind": "thread", "id": "relight"}) == ["g"]
    assert gated({"kind": "thread", "id": "relight", "is": "resolved"}) == []
    assert gated({"kind": "item", "id": "brass_key"}) == ["g"]
    assert gated({"kind": "item", "id": "brass_key", "who": "maren"}) == []


def test_gate_mistakes_are_reported_by_path() -> None:
    errors = card_errors(
        {
            "entry": "x",
            "triggers": "anchor",
            "gates": [
                {"kind": "flag", "id": "ferry_hierd"},
                {"kind": "stat", "id": "npc.maren.trust", "band": "loving"},
                {"kind": "stat", "id": "world.nope", "min": 1},
                {"kind": "thread", "id": "relight", "is": "done"},
            ],
        },
        RULES,
    )
    assert any(e.startswith("gates[0].id: no flag 'ferry_hierd'") for e in errors)
    assert any(
        e.startswith("gates[1].band: the stat 'npc.maren.trust' has no band 'loving'")
        for e in errors
    )
    assert any(e.startswith("gates[2].id: no stat 'world.nope'") for e in errors)
    assert any(e.startswith("gates[3].is:") for e in errors)
    assert card_errors({"entry": "x", "triggers": "/a(/"}, RULES)[0].startswith(
        "triggers: '/a(/' is not a valid regular expression"
    )
    assert card_errors({"entry": "x", "triggers": "anchor", "probability": 150}, RULES)[
        0
    ].startswith("probability:")
    assert card_errors({"entry": "x", "gates": [{"kind": "flag", "id": "ferry_hired"}]}, None)[
        0
    ].startswith("gates[0]: this story has no state rules")
    assert (
        card_errors(
            {"entry": "x", "triggers": "anchor", "gates": [{"kind": "flag", "id": "ferry_hired"}]},
            RULES,
        )
        == []
    )


def test_sticky_cooldown_and_delay_count_turns() -> None:
    sticky = card(name="s", triggers="bell", sticky=2)
    # fired at turn 5 by its key; no key afterwards: stays through turn 7, gone at 8
    assert [fired([sticky], "", turn=t, last={0: 5}) for t in (6, 7, 8)] == [["s"], ["s"], []]
    cool = card(name="c", triggers="bell", cooldown=2)
    assert [fired([cool], "bell", turn=t, last={0: 5}) for t in (6, 7, 8)] == [[], [], ["c"]]
    assert fired([card(name="d", triggers="bell", delay=6)], "bell", turn=5) == []
    assert fired([card(name="d", triggers="bell", delay=6)], "bell", turn=6) == ["d"]


def test_inclusion_group_one_winner_and_override() -> None:
    cards = [
        card(name=f"w{i}", triggers="storm", group="weather", group_weight=w)
        for i, w in enumerate((1, 1000, 1))
    ]
    winners = {tuple(fired(cards, "storm", seed=str(n))) for n in range(30)}
    assert all(len(w) == 1 for w in winners) and ("w1",) in winners
    cards[2] = card(name="boss", triggers="storm", group="weather", group_override=True, order=5)
    assert fired(cards, "storm") == ["boss"]


def test_regex_that_backtracks_forever_is_cut_off_and_noted() -> None:
    evil = card(name="evil", triggers="/(a|aa)+$/")
    good = card(name="good", triggers="lamp")
    sel = select([evil, good], [Part.of("your action", "a" * 40 + "! lamp", 0)], turn=1, seed="s")
    assert [d.name for d in sel.fired] == ["good"]
    assert sel.decisions[0].stopped == "regex" and "cut off" in sel.decisions[0].why
    assert any("cut off" in note for note in sel.notes)


def test_recursion_stops_at_its_depth() -> None:
    chain = [card(name=f"c{i}", triggers=f"k{i}", entry=f"lore k{i + 1}") for i in range(6)]
    assert fired(chain, "k0", depth=0) == ["c0"]
    assert fired(chain, "k0", depth=2) == ["c0", "c1", "c2"]
    assert len(fired(chain, "k0", depth=50)) == 6
    chain[0] = card(name="c0", triggers="k0", entry="lore k1", prevent_recursion=True)
    assert fired(chain, "k0", depth=5) == ["c0"]


def test_rules_in_words() -> None:
    words = rules_in_words(
        card(
            triggers="maren",
            secondary_triggers="boat",
            logic="not_any",
            probability=40,
            sticky=2,
            gates=[{"kind": "stat", "id": "npc.maren.trust", "band": "trusting"}],
        )
    )
    text = " ".join(words)
    assert "'maren'" in text and "none of 'boat'" in text and "40% chance" in text
    assert "npc.maren.trust is in the band 'trusting'" in text and "2 more turns" in text


# --- properties -----------------------------------------------------------------------

WORDS = ["maren", "boat", "storm", "key", "lamp", "bell", "oar"]
cards_st = st.lists(
    st.builds(
        lambda name, keys, entry, prob, group, order, sticky, cooldown, rec: StoryCard(
            name=name,
            triggers=", ".join(keys),
            entry=" ".join(entry) or "x",
            probability=prob,
            group=group,
            order=order,
            sticky=sticky,
            cooldown=cooldown,
            prevent_recursion=rec,
        ),
        st.text("abcdef", min_size=1, max_size=4),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        st.lists(st.sampled_from(WORDS), max_size=4),
        st.integers(0, 100),
        st.sampled_from(["", "g1", "g2", "g1,g2"]),
        st.integers(-5, 5),
        st.integers(0, 3),
        st.integers(0, 3),
        st.booleans(),
    ),
    max_size=25,
)
text_st = st.lists(st.sampled_from(WORDS + ["the", "sea"]), max_size=12).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    cards_st,
    text_st,
    st.integers(0, 10),
    st.text(max_size=8),
    st.dictionaries(st.integers(0, 24), st.integers(0, 20)),
)
def test_a_retry_decides_the_same_way(cards, text, depth, seed, last) -> None:
    """The same head (seed), state and cards give the same cards, reasons included."""

    def once():
        sel = select(
            cards,
            [Part.of("your action", text, 0)],
            turn=20,
            seed=seed,
            last_fired=last,
            recursion_depth=depth,
        )
        return [(d.index, d.why, tuple(d.steps)) for d in sel.fired]

    assert once() == once()


@settings(max_examples=150, deadline=None)
@given(cards_st, text_st, st.integers(0, 30), st.text(max_size=8))
def test_recursion_terminates_and_groups_keep_one(cards, text, depth, seed) -> None:
    sel = select(cards, [Part.of("your action", text, 0)], turn=3, seed=seed, recursion_depth=depth)
    indexes = [d.index for d in sel.fired]
    assert len(indexes) == len(set(indexes)) <= len(cards)
    for group in ("g1", "g2"):
        assert sum(1 for i in indexes if group in cards[i].group.split(",")) <= 1
    for d in sel.fired:  # every fired card was reachable: by a key in the text, or recursion
        assert d.how in ("key", "recursion", "sticky") and (
            d.how != "key" or any(k.text in text for k in parse_keys(cards[d.index].triggers))
        )


async def words(text: str) -> int:
    return len(text.split())


@settings(max_examples=60, deadline=None)
@given(
    cards_st,
    text_st,
    st.integers(150, 600),
    st.floats(0.05, 0.5),
    st.one_of(st.none(), st.integers(1, 6)),
    st.sampled_from([0, 0, 5, 12, 40]),
)
def test_budgets_are_never_exceeded(cards, text, budget, share, per_card, overall) -> None:
    raw = [
        {**c.dump(), "max_tokens": per_card, "entry": c.entry + " more words" * 5} for c in cards
    ]
    inputs = ContextInput(
        plot={"story_cards": raw},
        history=[HistoryTurn("do", "look", text, 1, 1)],
        action_kind="do",
        action_text=text,
        options=ContextOptions(
            budget=budget,
            reserve_for_reply=20,
            card_share=share,
            history_step=1,
            card_budget=overall,
        ),
    )
    assembly = asyncio.run(assemble(inputs, words))
    section = assembly.section("story_cards")
    sent = [i for i in section.items if i.included] if section else []
    assert sum(i.tokens for i in sent) <= int((budget - 20) * share)
    if overall:
        assert sum(i.tokens for i in sent) <= overall
    cut = (
        [i for i in section.items if not i.included and "dropped by the overall budget" in i.why]
        if section
        else []
    )
    assert not {i.ref for i in cut} & set(assembly.cards_fired)  # a cut card's timers never start
    assert all(f"'{i.key}'" in " ".join(assembly.notes) for i in cut)
    if per_card:
        assert all(i.tokens <= per_card for i in sent)
    assert all(i.text in completion_request(assembly).prompt for i in sent)


def test_positions_place_cards_where_they_say() -> None:
    plot = {
        "author_note": "Rain.",
        "story_cards": [
            {"name": "before", "entry": "BEFORE", "constant": True, "position": "before_history"},
            {"name": "after", "entry": "AFTER", "constant": True, "position": "after_history"},
            {"name": "deep", "entry": "DEEP", "constant": True, "position": "at_depth", "depth": 1},
            {"name": "note", "entry": "NOTE", "constant": True, "position": "author_note"},
            {
                "name": "high",
                "entry": "HIGH",
                "constant": True,
                "order": 500,
                "position": "before_history",
            },
        ],
    }
    history = [HistoryTurn("do", f"act {d}", f"line {d}a\nline {d}b", d, d) for d in range(1, 4)]
    inputs = ContextInput(
        plot=plot,
        history=history,
        action_kind="do",
        action_text="wait",
        options=ContextOptions(budget=2000, history_step=1, author_note_depth=3),
    )
    assembly = asyncio.run(assemble(inputs, words))
    prompt = completion_request(assembly).prompt
    assert (
        prompt.index("BEFORE") < prompt.index("HIGH") < prompt.index("act 1")
    )  # higher order later
    assert prompt.index("line 3a") < prompt.index("DEEP") < prompt.index("line 3b")
    assert (
        prompt.index("line 2b")
        < prompt.index("Rain.")
        < prompt.index("NOTE")
        < prompt.index("act 3")
    )  # with the note, 3 lines up
    assert prompt.index("line 3b") < prompt.index("AFTER") < prompt.index("> You wait")
    chat = "\n".join(m.content for m in chat_request(assembly).messages)
    assert all(word in chat for word in ("BEFORE", "AFTER", "DEEP", "NOTE", "HIGH"))
