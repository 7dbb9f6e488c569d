"""Story-card matching cost: 1,000 cards with World Info rules and state gates, per turn;
then a real-shaped 500-entry lorebook through the whole prompt assembly.

    .venv/bin/python benchmarks/cards.py [--cards 1000] [--turns 200] [--real 500]

Builds a realistic lorebook: mixed-case multi-word keys (SillyTavern files carry up to 49
per entry), secondary keys with each logic, whole-word and case-sensitive cards, a few
regex keys, groups, probability, sticky/cooldown timers, and a quarter of the cards gated
on the state (flags, stats in a band, locations, items). Each turn scans a recent window of
four turns of ~120-word narration plus the action, with the timers carried turn to turn.

Each turn starts, as a real one does, from the cards as stored JSON (freshly decoded, as
the store hands them over; the decoding is the store's read and is not timed): the timed
part is `cardset.card_set` (validation and key parsing, kept by content, so a turn
with unchanged cards pays only for comparing them) plus `worldinfo.select`, with the app's
default linger (a card with no timers stays 4 turns after it fired).

Prints the median and 95th percentile per turn (wall clock and this process's CPU time:
on a busy shared machine the wall clock includes waiting for a core), the ratio to the
5 ms goal, and what one edit of the cards costs once (the set validated and compiled
anew). Timing is measured here, not asserted in tests.

The real-shaped lorebook (`real_lorebook`: 500 entries of 300-4,000 characters that name
each other, proper-noun keys shared between entries, recursion on) is what players import
from SillyTavern; its turn is timed through `prompt.assemble` (cards found, held to the
budget, fitted, the prompt built), the goal 50 ms of engine time a turn.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.context import cardset  # noqa: E402
from talekeeper.context.cardspec import StoryCard  # noqa: E402
from talekeeper.context.worldinfo import Part, select  # noqa: E402

GOAL_MS = 5.0
LINGER = 4  # the app's default: trigger_window_turns
_NAMES = random.Random(0)
VOCAB = sorted(
    {
        "".join(_NAMES.choices("abcdefghijklmnopqrstuvwxyz", k=_NAMES.randint(5, 9)))
        for _ in range(3000)
    }
)
"""Proper names (places, people, things): what lorebook keys are, mostly."""
PLAIN = "the a of and you she he rain sea wind night lamp door stone light dark cold old road hill tower".split()
RULES = {
    "flags": {f"flag{i}": {} for i in range(20)},
    "entities": [{"id": f"place{i}"} for i in range(10)] + [{"id": f"item{i}"} for i in range(10)],
    "stats": {
        "world": {
            "storm": {
                "min": 0,
                "max": 10,
                "initial": 4,
                "bands": [[0, 3, "calm"], [3, 7, "gale"], [7, 10, "tempest"]],
            }
        }
    },
}


def lorebook(n: int, rng: random.Random) -> list[StoryCard]:
    cards = []
    for i in range(n):
        keys = [
            " ".join(rng.sample(VOCAB, rng.choice((1, 1, 2)))).title()
            for _ in range(rng.randint(2, 8))
        ]
        if i % 50 == 0:
            keys.append(f"/{rng.choice(VOCAB)}(s|es)?\\b/i")
        gates = []
        if i % 4 == 0:
            kind = rng.choice(("flag", "stat", "location", "item"))
            gates = [
                {
                    "flag": {"kind": "flag", "id": f"flag{rng.randrange(20)}"},
                    "stat": {"kind": "stat", "id": "world.storm", "band": "gale"},
                    "location": {"kind": "location", "id": f"place{rng.randrange(10)}"},
                    "item": {"kind": "item", "id": f"item{rng.randrange(10)}"},
                }[kind]
            ]
        cards.append(
            StoryCard(
                name=f"card {i}",
                entry=" ".join(rng.choices(PLAIN, k=40) + [rng.choice(VOCAB).title()]),
                triggers=", ".join(keys),
                secondary_triggers=", ".join(rng.sample(VOCAB, 2)) if i % 5 == 0 else "",
                logic=rng.choice(("and_any", "and_all", "not_any", "not_all")),
                whole_words=i % 3 == 0,
                case_sensitive=i % 7 == 0,
                probability=rng.choice((100, 100, 100, 50)),
                group=f"g{i % 40}" if i % 6 == 0 else "",
                sticky=2 if i % 9 == 0 else 0,
                cooldown=1 if i % 11 == 0 else 0,
                gates=gates,
            )
        )
    return cards


def real_lorebook(n: int, rng: random.Random) -> tuple[list[dict], list[str]]:
    """A lorebook shaped like the large ones players import (SillyTavern World Info of
    300-500 entries): proper-noun keys, 2-8 per entry, many shared between entries (a
    kingdom's name, a faction's); entries of 300-4,000 characters that name other entries
    (so recursion reaches them); a few constant entries, regex keys, secondary keys and
    groups. Built as stored JSON (what a turn reads), with the names the story mentions."""
    names = [w.title() for w in rng.sample(VOCAB, n + 40)]
    shared = names[n : n + 40]  # realms, factions, gods: keys of many entries
    cards = []
    for i in range(n):
        own = names[i]
        keys = [own, *(f"{own} {w}" for w in rng.sample(PLAIN[5:], rng.randint(0, 2)))]
        keys += rng.sample(shared, rng.choice((0, 1, 1, 2, 3)))
        if i % 40 == 0:
            keys.append(f"/{own.lower()}(s|ian)?\\b/i")
        mentions = rng.sample(names[:n], rng.randint(2, 8)) + rng.sample(shared, 2)
        length = rng.choice((300, 600, 1200, 2000, 4000))
        body = []
        while sum(map(len, body)) < length:
            body.append(" ".join(rng.choices(PLAIN, k=12)))
            body.append(rng.choice(mentions))
        card = {
            "type": "other",
            "name": own,
            "entry": f"{own}: " + " ".join(body),
            "triggers": ", ".join(dict.fromkeys(keys)),
            "notes": "",
        }
        if i % 25 == 0:
            card["constant"] = True
        if i % 9 == 0:
            card["secondary_triggers"] = ", ".join(rng.sample(shared, 2))
        if i % 11 == 0:
            card["group"] = f"g{i % 7}"
        cards.append(card)
    return cards, names


def narration(rng: random.Random, words: int = 120) -> str:
    return " ".join(
        rng.choice(PLAIN) if rng.random() < 0.99 else rng.choice(VOCAB).title()
        for _ in range(words)
    )


def real_turns(entries: int, turns: int, seed: int) -> None:
    """A turn's engine time with a real-shaped lorebook: the cards found and fitted to the
    budget and the whole prompt assembled (`prompt.assemble`, token counts cached as a
    turn's are), against a window of four turns that name the lore."""
    import asyncio

    from talekeeper.context.prompt import ContextInput, HistoryTurn, assemble
    from talekeeper.context.tokens import TokenCounter

    rng = random.Random(seed)
    cards, names = real_lorebook(entries, rng)
    stored = json.dumps(cards)

    def told(words: int = 120) -> str:
        return " ".join(
            rng.choice(PLAIN) if rng.random() < 0.96 else rng.choice(names) for _ in range(words)
        )

    async def estimate(text: str) -> int:
        return max(1, len(text) // 4)

    count = TokenCounter(estimate)
    history = [HistoryTurn("do", told(8), told(), depth=d) for d in range(1, 9)]
    plot = {"narrator_instructions": "You narrate.", "story_cards": None}
    last: dict[int, int] = {}
    wall, cpu, fired, sent = [], [], [], []
    cardset.forget()
    for turn in range(9, 9 + turns):
        history = [*history[1:], HistoryTurn("do", told(8), told(), depth=turn - 1)]
        inputs = ContextInput(
            plot={**plot, "story_cards": json.loads(stored)},  # the store's read: not timed
            history=history,
            action_kind="do",
            action_text=f"ask about {rng.choice(names)}",
            turn=turn,
            seed=str(turn),
            card_last_fired=last,
        )
        began, started = time.perf_counter(), time.process_time()
        assembly = asyncio.run(assemble(inputs, count))
        wall.append((time.perf_counter() - began) * 1000)
        cpu.append((time.process_time() - started) * 1000)
        for index in assembly.cards_fired:
            last[index] = turn
        section = next(s for s in assembly.sections if s.name == "story_cards")
        fired.append(len(section.items or []))
        sent.append(len(assembly.cards_fired))
    print(
        f"real-shaped lorebook: {entries} entries (300-4,000 characters, 2-8 keys, shared keys, "
        f"recursion on), {turns} turns, a whole prompt assembled each turn"
    )
    first_wall, first_cpu = wall.pop(0), cpu.pop(0)
    print(
        f"  engine time per turn: median {statistics.median(wall):.1f} ms wall, "
        f"{statistics.median(cpu):.1f} ms CPU, p95 CPU {sorted(cpu)[int(len(cpu) * 0.95) - 1]:.1f} ms "
        f"(goal 50 ms: ratio {statistics.median(cpu) / 50:.2f}); cards decided per turn "
        f"{statistics.mean(fired):.0f}, sent {statistics.mean(sent):.1f}"
    )
    print(
        f"  the first turn (the book validated and compiled): {first_wall:.0f} ms wall, {first_cpu:.0f} ms CPU"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--real", type=int, default=500, help="entries of the real-shaped book")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cards = lorebook(args.cards, rng)
    state = {
        "flags": {f"flag{i}": rng.random() < 0.5 for i in range(20)},
        "entities": {"player": {"location": "place3"}},
        "possessions": {f"item{i}": "player" for i in range(0, 10, 2)},
        "stats": {"world": {"storm": {"value": 5}}},
    }
    history = [narration(rng) for _ in range(4)]
    stored = json.dumps([c.dump() for c in cards])
    last: dict[int, int] = {}
    times, cpu_times, set_times, fired = [], [], [], []
    cardset.forget()
    began, cpu = time.perf_counter(), time.process_time()
    cardset.card_set(json.loads(stored), LINGER)  # the first turn after an edit
    cold_wall, cold_cpu = (time.perf_counter() - began) * 1000, (time.process_time() - cpu) * 1000
    for turn in range(1, args.turns + 1):
        history = [*history[1:], narration(rng)]
        parts = [Part.of("your action", "> You " + narration(rng, 8), 0)]
        for age, text in enumerate(reversed(history), start=1):
            parts.append(Part.of(f"turn {turn - age} (narration)", text, age))
        raw = json.loads(stored)  # the store's read: not timed
        began, cpu = time.perf_counter(), time.process_time()
        compiled = cardset.card_set(raw, LINGER)
        hashed = time.process_time()
        selection = select(
            compiled, parts, turn=turn, seed=str(turn), state=state, rules=RULES, last_fired=last
        )
        times.append((time.perf_counter() - began) * 1000)
        cpu_times.append((time.process_time() - cpu) * 1000)
        set_times.append((hashed - cpu) * 1000)
        for d in selection.fired:
            if d.fresh:
                last[d.index] = turn
        fired.append(len(selection.fired))
    times.sort()
    median, cpu = statistics.median(times), statistics.median(cpu_times)
    p95 = times[int(len(times) * 0.95) - 1]
    load = os.getloadavg()[0]
    print(
        f"cards: {args.cards} cards (a quarter gated), {args.turns} turns, window 4 turns x ~120 words + action"
    )
    print(
        f"  per turn: median {median:.2f} ms, p95 {p95:.2f} ms, max {times[-1]:.2f} ms; {statistics.mean(fired):.1f} cards fired on average"
    )
    print(
        f"  CPU time per turn: median {cpu:.2f} ms (load average {load:.1f} on {os.cpu_count()} CPUs while measuring)"
    )
    print(
        f"    of which finding the kept card set (the cards compared in full): median {statistics.median(set_times):.2f} ms"
    )
    print(f"  median / {GOAL_MS:g} ms goal: wall {median / GOAL_MS:.2f}, CPU {cpu / GOAL_MS:.2f}")
    print(
        f"  after an edit of the cards (validated and compiled anew, once): {cold_wall:.1f} ms wall, {cold_cpu:.1f} ms CPU"
    )
    if args.real:
        real_turns(args.real, min(args.turns, 60), args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
