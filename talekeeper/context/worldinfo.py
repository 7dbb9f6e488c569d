"""Which story cards fire this turn, and why each one did or did not (no I/O).

One pass over the cards, in this order, each step able to stop a card and say so:

  enabled → delay (not before turn N) → sticky (still on from an earlier turn: keys and
  probability skipped) → cooldown → keys (primary, then secondary by logic, within the
  card's scan depth; or constant; or gates only) → gates (on the state at the head) →
  probability (rolled from the turn's seed, so a retry of the same turn rolls the same)

then recursion (the text of cards that fired is scanned for the keys of those that did
not, up to `recursion_depth` times), then inclusion groups (one card per group: sticky
first, then by order with group_override, else a weighted draw from the turn's seed).
The token budget is applied by the prompt assembly, which knows token counts; it takes
`Selection.fired` in priority order (constant first, then higher order, then card order).

Every roll is a pure function of (seed, card index), so the decision is reproducible: the
same head, state and cards always give the same cards.

Cost: a turn examines only the cards some trigram of the window points at, plus those a
rule makes act without a key (constant, gates only, a delay, a timer that ran lately);
the rest are left for recursion untouched. The compiled set (`CardSet`) is built once per
card list (`context.cardset` keeps it by content hash); each text's trigrams are kept too,
since the window is mostly the same texts from turn to turn (`benchmarks/cards.py`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from talekeeper.context import gates as gate_engine
from talekeeper.context.cardspec import StoryCard
from talekeeper.context.keys import BadKey, Key, RegexTimeout, parse_keys_tuple

REGEX_TURN_BUDGET = 40
"""Regex keys cut off in one turn before the rest are skipped (each cut costs its timeout)."""

ALL = 10**9
"""A scan depth that reaches every part (candidates are found over the whole window)."""

BUDGET_MARGIN = (2, 1000)
"""The cards kept for the prompt's budget: twice it and 1,000 tokens more, by a rough
estimate (a quarter of the characters). The prompt fits them exactly, skipping one that
does not fit for a smaller one after it, so it is given well more than it can take."""


@dataclass(frozen=True)
class Part:
    """A piece of scanned text: `age` 0 is the player's action, 1 the last turn, …;
    cards' own text (recursion) has age -1 and is scanned by every card."""

    where: str
    text: str
    age: int
    lowered: str = ""

    @staticmethod
    def of(where: str, text: str, age: int) -> Part:
        return Part(where, text, age, text.lower())


@dataclass(slots=True)
class Decision:
    """What became of one card this turn (Insights shows these)."""

    index: int
    name: str
    fired: bool = False
    how: str = ""  # key | constant | gates | sticky | recursion
    why: str = ""  # the reason it fired, or the step that stopped it
    steps: list[str] = field(default_factory=list)  # each check passed, in order
    stopped: str = ""  # the step that stopped it: delay, cooldown, gate, chance, group, …
    order: int = 100
    constant: bool = False
    fresh: bool = False  # fired this turn by its own rules (not held on by sticky)
    age: int = ALL  # where its key was found: 0 the player's action, 1 the last turn, …


@dataclass
class Selection:
    fired: list[Decision]  # in priority order
    decisions: dict[int, Decision]  # every card that got past "no key matched"
    unmatched: int = 0  # cards whose keys were nowhere in the window
    notes: list[str] = field(default_factory=list)
    cards: Sequence[StoryCard] = ()  # the cards decided, by index (the prompt reads entries here)


def roll(seed: str, *salt: object) -> int:
    """0..99 from the turn's seed: the same turn rolls the same, a new turn rolls anew."""
    digest = hashlib.blake2b(
        ("\x1f".join(map(str, (seed, *salt)))).encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") % 100


def _fraction(seed: str, *salt: object) -> float:
    digest = hashlib.blake2b(
        ("\x1f".join(map(str, (seed, *salt)))).encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass
class _Index:
    """Each card's parsed keys, and its primary keys filed under their first three
    characters, so a scan looks up the window's trigrams instead of testing every key."""

    keys: list[tuple[tuple[Key, ...], tuple[Key, ...]] | BadKey]
    by_gram: dict[bool, dict[str, list[int]]]  # folded? → trigram → card indexes
    always: list[int]  # cards with a regex or a key under three characters


@dataclass(frozen=True, eq=False)
class CardSet:
    """A card list compiled once for many turns: keys parsed and filed, and the cards every
    turn must look at whatever the text says (constant, gates only, a delay, a timer, a bad
    key). A turn then examines those and the cards a trigram of the window points at; the
    rest can only fire by recursion. Build with `compile_cards`; `context.cardset` keeps
    them by content hash so stored cards are validated and compiled once, not every turn."""

    cards: tuple[StoryCard, ...]
    index: _Index
    active: frozenset[int]  # enabled, with an entry
    eager: frozenset[int]  # examined every turn: constant, gates without keys, a bad key
    delayed: tuple[tuple[int, int], ...]  # (index, delay): examined while the turn is before it
    timed: frozenset[int]  # sticky or cooldown: examined when they fired lately
    quiet: dict[int, tuple[int, StoryCard, tuple[Key, ...], tuple[Key, ...]]]  # active, not eager,
    # recursion may reach them: index → (index, card, keys, secondary keys), in index order
    shut: frozenset[int]  # active, not eager, excluded from recursion
    deepest: int  # the deepest scan_depth a card asks for (0: none asks)


def compile_cards(cards: Sequence[StoryCard]) -> CardSet:
    cards = tuple(cards)
    index_ = _index(cards)
    active = frozenset(
        i for i, c in enumerate(cards) if c.enabled and c.entry and not c.entry.isspace()
    )
    eager = frozenset(
        i
        for i in active
        if cards[i].constant
        or isinstance(index_.keys[i], BadKey)
        or (cards[i].gates and not index_.keys[i][0])  # type: ignore[index]
    )
    delayed = tuple((i, cards[i].delay) for i in sorted(active) if cards[i].delay)
    timed = frozenset(i for i in active if cards[i].sticky or cards[i].cooldown)
    deepest = max((c.scan_depth or 0 for c in cards), default=0)
    quiet = {
        i: (i, cards[i], *index_.keys[i])  # type: ignore[misc]
        for i in sorted(active - eager)
        if not cards[i].exclude_recursion
    }
    shut = frozenset(i for i in active - eager if cards[i].exclude_recursion)
    return CardSet(cards, index_, active, eager, delayed, timed, quiet, shut, deepest)


_INDEXES: dict[tuple, _Index] = {}


def _index(cards: Sequence[StoryCard]) -> _Index:
    signature = tuple(
        (c.triggers, c.secondary_triggers, c.case_sensitive, c.whole_words) for c in cards
    )
    found = _INDEXES.get(signature)
    if found is not None:
        return found
    keys: list[tuple[tuple[Key, ...], tuple[Key, ...]] | BadKey] = []
    by_gram: dict[bool, dict[str, list[int]]] = {True: {}, False: {}}
    always: list[int] = []
    for i, (triggers, secondary, case, whole) in enumerate(signature):
        try:
            primary = parse_keys_tuple(triggers, case, whole)
            keys.append((primary, parse_keys_tuple(secondary, case, whole)))
        except BadKey as exc:
            keys.append(exc)
            continue
        if any(k.is_regex or len(k.needle) < 3 for k in primary):
            always.append(i)
            continue
        for k in primary:
            by_gram[k.folded].setdefault(k.needle[:3], []).append(i)
    found = _Index(keys, by_gram, always)
    if len(_INDEXES) >= 8:
        _INDEXES.clear()
    _INDEXES[signature] = found
    return found


_GRAMS: dict[str, frozenset[str]] = {}


def _grams_of(text: str) -> frozenset[str]:
    """A text's trigrams, kept for the next turns: the window is mostly the same texts
    from turn to turn (only the action and the newest narration are new)."""
    found = _GRAMS.get(text)
    if found is None:
        found = frozenset(text[i : i + 3] for i in range(len(text) - 2))
        if (
            len(_GRAMS) >= 512
        ):  # the window's texts and fired cards' entries; ~50 KB a 700-character text
            _GRAMS.clear()
        _GRAMS[text] = found
    return found


class _Scanner:
    """The window joined per scan depth, so each key is one substring search, and a regex
    cut-off is counted against the turn's allowance."""

    def __init__(self, parts: Sequence[Part]):
        self.parts = list(parts)
        self.oldest = max((p.age for p in self.parts), default=0)
        self._joined: dict[int, tuple[str, str]] = {}
        self._grams: dict[tuple[int, bool], set[str]] = {}
        self.cut: list[str] = []
        self.skipped: list[
            str
        ] = []  # regex keys not run: the turn's allowance of cut-offs was spent

    def grams(self, depth: int, folded: bool) -> set[str]:
        depth = min(depth, self.oldest)
        grams = self._grams.get((depth, folded))
        if grams is None:
            # The union of each part's trigrams: the joined text's, less those across a
            # part boundary, which hold the separator no key contains.
            chosen = [p.lowered if folded else p.text for p in self.parts if 0 <= p.age <= depth]
            grams = set().union(*map(_grams_of, chosen))
            self._grams[(depth, folded)] = grams
        return grams

    def candidates(self, index: _Index) -> set[int]:
        """Cards one of whose primary keys could occur anywhere in these parts."""
        found = set(index.always)
        for folded, table in index.by_gram.items():
            if not table:
                continue
            grams = self.grams(ALL, folded)
            if len(grams) < len(table):
                for gram in grams:
                    hit = table.get(gram)
                    if hit:
                        found.update(hit)
            else:
                for gram, hit in table.items():
                    if gram in grams:
                        found.update(hit)
        return found

    def _could(self, key: Key, depth: int) -> bool:
        """False when a plain key cannot occur: its first or last three characters are
        not among the text's trigrams (one set look-up instead of a scan of the text)."""
        if not key.head:
            return True
        grams = self.grams(depth, key.folded)
        return key.head in grams and key.tail in grams

    def text(self, depth: int) -> tuple[str, str]:
        depth = min(depth, self.oldest)  # deeper than the window reads the same text
        found = self._joined.get(depth)
        if found is None:
            chosen = [p for p in self.parts if 0 <= p.age <= depth]
            found = (
                "\n\x00".join(p.text for p in chosen),
                "\n\x00".join(p.lowered for p in chosen),
            )
            self._joined[depth] = found
        return found

    def first(self, keys: Sequence[Key], depth: int) -> tuple[Key, Part] | None:
        """The first key that occurs within `depth`, and the newest part it is in."""
        text, lowered = self.text(depth)
        grams = (self.grams(depth, False), self.grams(depth, True))
        for key in keys:
            if key.head and (
                key.head not in grams[key.folded] or key.tail not in grams[key.folded]
            ):
                continue  # cannot occur (see _could)
            if key.is_regex or self._find(key, text, lowered):  # a regex is run part by part
                for part in self.parts:
                    if 0 <= part.age <= depth and self._find(key, part.text, part.lowered):
                        return key, part
        return None

    def present(self, keys: Sequence[Key], depth: int) -> list[bool]:
        text, lowered = self.text(depth)
        parts = [p for p in self.parts if 0 <= p.age <= depth]
        return [
            any(self._find(key, p.text, p.lowered) for p in parts)
            if key.is_regex
            else self._could(key, depth) and self._find(key, text, lowered)
            for key in keys
        ]

    def _find(self, key: Key, text: str, lowered: str) -> bool:
        if not key.is_regex:
            return key.find(text, lowered)
        seen = _REGEX_SEEN.get((key.text, text))
        if seen is None:
            if len(self.cut) >= REGEX_TURN_BUDGET:
                if key.text not in self.skipped:
                    self.skipped.append(key.text)  # named in the turn's notes
                return False
            try:
                seen = key.find(text, lowered)
            except RegexTimeout:
                seen = CUT
            if len(_REGEX_SEEN) >= 20000:
                _REGEX_SEEN.clear()
            _REGEX_SEEN[(key.text, text)] = seen
        if seen is CUT:
            self.cut.append(key.text)  # noted every turn it would have run, but run only once
            return False
        return seen  # type: ignore[return-value]


CUT = object()
"""A regex key cut off on a text (kept, so it is noted again without running again)."""

_REGEX_SEEN: dict[tuple[str, str], object] = {}
"""(regex key as written, text) → whether it matched, or CUT. Regex keys run one part of the
window at a time and the parts recur from turn to turn (history, cards' entries), so each
regex runs once per text instead of once per turn; `/…/flags` as written fixes the pattern."""


def _secondary(card: StoryCard, keys: list[Key], present: list[bool]) -> tuple[bool, str]:
    if not keys:
        return True, ""
    found = [k.text for k, p in zip(keys, present, strict=True) if p]
    logic = card.logic
    ok = {
        "and_any": bool(found),
        "and_all": len(found) == len(keys),
        "not_any": not found,
        "not_all": len(found) < len(keys),
    }[logic]
    said = {
        "and_any": "any of the secondary keys",
        "and_all": "all of the secondary keys",
        "not_any": "none of the secondary keys",
        "not_all": "not all of the secondary keys",
    }[logic]
    have = ", ".join(f"'{f}'" for f in found) or "none"
    return ok, f"needs {said} (found: {have})"


def select(
    cards: Sequence[StoryCard] | CardSet,
    parts: Sequence[Part],
    *,
    turn: int,
    seed: str,
    state: Mapping[str, Any] | None = None,
    rules: Mapping[str, Any] | None = None,
    last_fired: Mapping[int, int] | None = None,
    window_turns: int = 4,
    recursion_depth: int = 2,
    budget_tokens: int | None = None,
) -> Selection:
    """Decide every card for the turn numbered `turn` (the one being written).

    last_fired: card index → the turn it last fired by its own rules (for sticky and
    cooldown); read from earlier turns' records on the path to the head, so undo and
    branches see exactly the timers of the story they are in.

    budget_tokens: the story-card budget the prompt will fit the cards into. Cards in
    priority order past BUDGET_MARGIN times it are held back (they could not be sent),
    and recursion stops once the budget is full, instead of firing hundreds of cards of
    a large lorebook to drop nearly all of them.
    """
    last_fired = last_fired or {}
    compiled = cards if isinstance(cards, CardSet) else compile_cards(cards)
    cards = compiled.cards
    scanner = _Scanner(parts)
    index_ = compiled.index
    candidates = scanner.candidates(index_)
    # The cards worth a look this turn; any other active card has no key in the window
    # and no rule that acts without one, so only recursion can still fire it.
    look = (candidates & compiled.active) | compiled.eager
    look.update(i for i, delay in compiled.delayed if turn < delay)
    look.update(i for i in last_fired if i in compiled.timed)
    decisions: dict[int, Decision] = {}
    fired: list[Decision] = []
    # May still fire by recursion: index → (index, card, keys, secondary keys).
    pending = {i: entry for i, entry in compiled.quiet.items() if i not in look}
    unmatched = len(compiled.shut) - len(compiled.shut & look)

    for index in sorted(look):
        card = cards[index]
        d = Decision(
            index, card.name or f"card {index + 1}", order=card.order, constant=card.constant
        )
        if turn < card.delay:
            d.stopped, d.why = "delay", f"waits until turn {card.delay} (this is turn {turn})"
            decisions[index] = d
            continue
        last = last_fired.get(index)
        if last is not None and card.sticky and last < turn <= last + card.sticky:
            ok, why = _gates(card, state, rules, d)
            if ok:
                d.fired, d.how = True, "sticky"
                d.why = f"sticky: fired at turn {last}, stays until turn {last + card.sticky}"
                fired.append(d)
            else:
                d.stopped, d.why = "gate", f"sticky, but {why}"
            decisions[index] = d
            continue
        if (
            last is not None
            and card.cooldown
            and last + card.sticky < turn <= last + card.sticky + card.cooldown
        ):
            d.stopped = "cooldown"
            d.why = f"cooling down: fired at turn {last}, can fire again at turn {last + card.sticky + card.cooldown + 1}"
            decisions[index] = d
            continue
        parsed = index_.keys[index]
        if isinstance(parsed, BadKey):
            d.stopped, d.why = "key", str(parsed)
            decisions[index] = d
            continue
        keys, secondary = parsed
        depth = window_turns if card.scan_depth is None else card.scan_depth
        if card.constant:
            d.how, d.why, d.age = "constant", "constant", 0
        elif not keys and card.gates:
            d.how, d.why = "gates", "no keys: fires while its gates hold"
        elif card.delay_until_recursion:
            pending[index] = (index, card, keys, secondary)
            continue
        else:
            before = len(scanner.cut)
            hit = scanner.first(keys, depth) if index in candidates else None
            if hit is None:
                if len(scanner.cut) > before:
                    d.stopped = "regex"
                    d.why = f"regex key {scanner.cut[-1]} was cut off (ran past its time limit); no other key matched"
                    decisions[index] = d
                elif card.exclude_recursion:
                    unmatched += 1
                else:
                    pending[index] = (index, card, keys, secondary)
                continue
            ok, why = _secondary(card, secondary, scanner.present(secondary, depth))
            d.how, d.why, d.age = "key", f"trigger '{hit[0].text}' in {hit[1].where}", hit[1].age
            for key in dict.fromkeys(scanner.cut[before:]):
                d.steps.append(f"regex key {key} was cut off (ran past its time limit)")
            if not ok:
                d.stopped, d.why = "secondary", f"{d.why}, but it {why}"
                decisions[index] = d
                continue
            if secondary:
                d.steps.append(why.replace("needs", "has"))
        decisions[index] = d
        if _rest(card, d, state, rules, seed):
            fired.append(d)

    # Recursion: fired cards' text can trigger cards that did not fire, one level at a
    # time, up to `recursion_depth` levels (0: none). Groups are decided after it, so a
    # card brought in by recursion competes in its group like any other.
    fired, full = _within(cards, fired, budget_tokens)
    level = 0
    source = list(fired)
    limit_note = ""
    while pending and source and not full:
        texts = [
            Part.of(f"card '{d.name}'", cards[d.index].entry, 0)
            for d in source
            if not cards[d.index].prevent_recursion
        ]
        if not texts:
            break
        sub = _Scanner(texts)
        # Only cards one of whose keys' trigrams is in the texts, in card order.
        maybe = [pending[i] for i in sorted(sub.candidates(index_).intersection(pending))]
        maybe = [entry for entry in maybe if not entry[1].exclude_recursion]
        if level >= recursion_depth:
            # Say what the limit held back (the first card one more level would reach).
            for index, card, keys, _ in maybe if recursion_depth > 0 else ():
                hit = sub.first(keys, 0)
                if hit is not None:
                    name = card.name or f"card {index + 1}"
                    limit_note = (
                        f"Recursion stopped at its depth limit ({recursion_depth}): "
                        f"trigger '{hit[0].text}' in {hit[1].where}'s text would have brought in '{name}'."
                    )
                    break
            scanner.cut += sub.cut
            break
        level += 1
        source = []
        for index, card, keys, secondary in maybe:
            hit = sub.first(keys, 0)
            if hit is None:
                continue
            del pending[index]
            d = Decision(
                index, card.name or f"card {index + 1}", order=card.order, constant=card.constant
            )
            d.how, d.why = (
                "recursion",
                f"trigger '{hit[0].text}' in {hit[1].where}'s text (recursion level {level})",
            )
            ok, why = _secondary(card, secondary, sub.present(secondary, 0))
            decisions[index] = d
            if not ok:
                d.stopped, d.why = "secondary", f"{d.why}, but it {why}"
                continue
            if _rest(card, d, state, rules, seed):
                fired.append(d)
                source.append(d)
        scanner.cut += sub.cut
        scanner.skipped += [k for k in sub.skipped if k not in scanner.skipped]
        fired, full = _within(cards, fired, budget_tokens)
        source = [d for d in source if d.fired]
    unmatched += len(pending)
    notes = []
    held = [d.name for d in decisions.values() if d.stopped == "budget"]
    if held:
        shown = ", ".join(f"'{n}'" for n in held[:8]) + (
            f" and {len(held) - 8} more" if len(held) > 8 else ""
        )
        notes.append(
            f"Story cards held back before the budget (the cards before them fill it): {shown}."
        )
    if full and pending:
        notes.append(
            "Recursion stopped early: the cards found already fill the story-card budget "
            f"(about {budget_tokens} tokens)."
        )
    if scanner.cut:
        cut = ", ".join(sorted(set(scanner.cut)))
        notes.append(f"Regex key(s) cut off after {int(1000 * _timeout())} ms on a text: {cut}.")
    if scanner.skipped:
        notes.append(
            f"Regex key(s) not tried this turn ({REGEX_TURN_BUDGET} cut-offs already): "
            f"{', '.join(scanner.skipped[:10])}."
        )
    if limit_note:
        notes.append(limit_note)

    fired = _groups(cards, fired, seed)
    fired.sort(key=priority)
    for d in fired:
        d.fresh = d.how != "sticky"
    return Selection(fired, decisions, unmatched, notes, cards)


def priority(d: Decision) -> tuple[bool, bool, int, int, int]:
    """The order cards claim the budget: constant ones, then those the player's current
    action names, then by `order` (higher first), then the most recently mentioned."""
    return (not d.constant, d.age != 0, -d.order, d.age, d.index)


def estimate(card: StoryCard) -> int:
    """A card's tokens, roughly (a quarter of its characters; its own budget at most)."""
    tokens = len(card.entry) // 4 + 1
    return min(tokens, card.max_tokens) if card.max_tokens else tokens


def _within(
    cards: Sequence[StoryCard], fired: list[Decision], budget: int | None
) -> tuple[list[Decision], bool]:
    """The fired cards, in priority order, that a budget of `budget` tokens could still
    take (BUDGET_MARGIN times it, estimated); the rest are held back, said in their
    decision. Also whether the budget is full."""
    if not budget:
        return fired, False
    fired = sorted(fired, key=priority)
    room = BUDGET_MARGIN[0] * budget + BUDGET_MARGIN[1]
    used = 0
    kept = []
    for d in fired:
        cost = estimate(cards[d.index])
        if used >= room:
            d.fired, d.stopped = False, "budget"
            d.why += f"; held back: the cards before it already fill the story-card budget ({budget} tokens)"
            continue
        used += cost
        kept.append(d)
    return kept, used >= room


def _timeout() -> float:
    from talekeeper.context.keys import REGEX_TIMEOUT

    return REGEX_TIMEOUT


def _gates(
    card: StoryCard, state: Mapping[str, Any] | None, rules: Mapping[str, Any] | None, d: Decision
) -> tuple[bool, str]:
    for gate in card.gates:
        held, why = gate_engine.check(gate, state, rules)
        if not held:
            return False, f"gate failed: {why}"
        d.steps.append(f"gate held: {why}")
    return True, ""


def _rest(card: StoryCard, d: Decision, state: Any, rules: Any, seed: str) -> bool:
    """Gates, then the probability roll; True when the card fires."""
    ok, why = _gates(card, state, rules, d)
    if not ok:
        d.stopped, d.why = "gate", f"{d.why}; {why}" if d.how != "gates" else why
        return False
    if card.probability < 100:
        rolled = roll(seed, d.index)
        if rolled >= card.probability:
            d.stopped = "chance"
            d.why += (
                f"; chance {card.probability}%: rolled {rolled} (needs under {card.probability})"
            )
            return False
        d.steps.append(f"chance {card.probability}%: rolled {rolled}")
    d.fired = True
    return True


def _groups(cards: Sequence[StoryCard], fired: list[Decision], seed: str) -> list[Decision]:
    """One card per inclusion group: sticky ones first, then group_override by order,
    then a weighted draw from the seed. A card in several groups must win each."""
    members: dict[str, list[Decision]] = {}
    for d in fired:
        for group in {g.strip() for g in cards[d.index].group.split(",") if g.strip()}:
            members.setdefault(group, []).append(d)
    losers: dict[int, str] = {}
    for group, ds in sorted(members.items()):
        if len(ds) < 2:
            continue
        sticky = [d for d in ds if d.how == "sticky"]
        override = [d for d in ds if cards[d.index].group_override]
        if sticky:
            winner, way = min(sticky, key=lambda d: d.index), "it is sticky"
        elif override:
            winner = max(override, key=lambda d: (d.order, -d.index))
            way = f"group override, highest order ({winner.order})"
        else:
            total = sum(cards[d.index].group_weight for d in ds)
            point = _fraction(seed, "group", group) * total
            winner = ds[-1]
            for d in ds:
                point -= cards[d.index].group_weight
                if point < 0:
                    winner = d
                    break
            way = f"weighted draw, weight {cards[winner.index].group_weight} of {total}"
        winner.steps.append(f"won group '{group}' ({way})")
        for d in ds:
            if d is not winner and d.index not in losers:
                losers[d.index] = f"lost group '{group}' to '{winner.name}' ({way})"
    kept = []
    for d in fired:
        if d.index in losers:
            d.fired, d.stopped = False, "group"
            d.why += f"; {losers[d.index]}"
        else:
            kept.append(d)
    return kept
