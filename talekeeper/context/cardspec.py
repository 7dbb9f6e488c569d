"""A story card's fields: SillyTavern World Info rules plus state gates, validated.

A card is stored as a plain JSON object (in a scenario document and in the adventure's
plot), so its rules are one Pydantic model: every field has a default, and a card written
before these fields existed (type, name, entry, triggers, notes) is still valid and still
behaves as before (case-insensitive, partial-word keys, scanned over the recent window).

The fields follow SillyTavern's World Info entry (README "Story cards" maps them one by
one); where talekeeper counts differently it says so here: scan depth and timed effects
count *turns* (one player action and its narration), not chat messages.

Gates are talekeeper's own: conditions on the state document at the moment being read.
`gate_errors` checks them against a scenario's rules, so a gate naming a flag the rules
never declare is a mistake by path, found before play.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from talekeeper.context.keys import BadKey, parse_keys, weak_key

Logic = Literal["and_any", "and_all", "not_any", "not_all"]
Position = Literal["before_history", "after_history", "at_depth", "author_note"]
GateKind = Literal["flag", "milestone", "location", "status", "stat", "thread", "item"]

MAX_ENTRY = 20_000
"""A card's entry, in characters: long lore (a lorebook's history of a kingdom) is kept
whole; the token budget decides each turn what fits."""

LOGIC_WORDS = {
    "and_any": "and any of",
    "and_all": "and all of",
    "not_any": "and none of",
    "not_all": "and not all of",
}
POSITION_WORDS = {
    "before_history": "before the story so far",
    "after_history": "after the story so far (just before the current state)",
    "at_depth": "inside the story, {depth} lines from its end",
    "author_note": "beside the author's note",
}


class Gate(BaseModel):
    """One condition on the state at the head. `not` turns it around.

    kind      id names                          also
    flag      a declared flag                   holds when the flag is set
    milestone a declared milestone              holds when reached
    location  a place (entity id)               `who` (default the player) is there, or inside it
    status    an entity                         its status equals `is` (case-insensitive)
    stat      a stat path: world.x, player.x,   its value's band is `band`, or it lies
              npc.<id>.x                        within `min`..`max` (inclusive)
    thread    a thread or quest                 its status is `is` (default "open")
    item      an item (entity id)               `who` (default the player) holds it
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    kind: GateKind
    id: str = Field(min_length=1, max_length=200)
    is_: str = Field("", alias="is", max_length=80)
    who: str = Field("", max_length=200)
    band: str = Field("", max_length=80)
    min: float | None = None
    max: float | None = None
    not_: bool = Field(False, alias="not")

    def dump(self) -> dict[str, Any]:
        """The stored form: only what differs from the defaults, with the JSON names."""
        data = self.model_dump(by_alias=True, exclude_defaults=True)
        data["kind"], data["id"] = self.kind, self.id
        return data


class StoryCard(BaseModel):
    """World info. Only `entry` is sent to the model, when the card's rules say so."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(
        "other",
        max_length=40,
        description="character, location, item, faction, … (for you; not sent).",
    )
    name: str = Field(
        "", max_length=200, description="A label for you (not sent). SillyTavern: comment."
    )
    entry: str = Field(
        "",
        max_length=MAX_ENTRY,
        description="What the model is told when the card fires. SillyTavern: content.",
    )
    triggers: str = Field(
        "",
        max_length=1000,
        description="Primary keys, comma-separated; `/regex/flags` for a regular expression. SillyTavern: key.",
    )
    notes: str = Field("", max_length=4000, description="Your notes (not sent).")
    secondary_triggers: str = Field(
        "",
        max_length=1000,
        description="Secondary keys, combined by `logic`. SillyTavern: keysecondary.",
    )
    logic: Logic = Field(
        "and_any", description="How secondary keys combine. SillyTavern: selectiveLogic."
    )
    whole_words: bool = Field(
        False, description="Keys match whole words only. SillyTavern: matchWholeWords."
    )
    case_sensitive: bool = Field(False, description="Keys match case. SillyTavern: caseSensitive.")
    constant: bool = Field(
        False, description="Always sent (gates and probability still apply). SillyTavern: constant."
    )
    enabled: bool = Field(
        True, description="A disabled card never fires. SillyTavern: disable (inverted)."
    )
    scan_depth: int | None = Field(
        None,
        ge=0,
        le=200,
        description="Past turns scanned besides your action; empty: the adventure's window.",
    )
    position: Position = Field(
        "after_history",
        description="Where the entry goes; by default after the story so far, where a card coming or going "
        "costs the model's prompt cache least. SillyTavern: position.",
    )
    depth: int = Field(
        4, ge=0, le=1000, description="Lines from the end of the story, for position at_depth."
    )
    order: int = Field(
        100, ge=-100000, le=100000, description="Higher: kept first under the budget, placed later."
    )
    probability: int = Field(
        100,
        ge=0,
        le=100,
        description="Chance in percent, rolled once per turn (a retry rolls the same).",
    )
    group: str = Field(
        "",
        max_length=200,
        description="Inclusion groups, comma-separated: one card per group is sent.",
    )
    group_weight: int = Field(
        100, ge=1, le=100000, description="The card's weight in its group's draw."
    )
    group_override: bool = Field(
        False, description="Wins its group by order instead of the weighted draw."
    )
    sticky: int = Field(0, ge=0, le=1000, description="Stays for this many turns after it fires.")
    cooldown: int = Field(
        0, ge=0, le=1000, description="Cannot fire again for this many turns after it leaves."
    )
    delay: int = Field(0, ge=0, le=100000, description="Cannot fire before turn N.")
    exclude_recursion: bool = Field(False, description="Other cards' text cannot trigger it.")
    prevent_recursion: bool = Field(False, description="Its text does not trigger other cards.")
    delay_until_recursion: bool = Field(False, description="Only other cards' text can trigger it.")
    max_tokens: int | None = Field(
        None, ge=1, le=4000, description="Its own token budget: a longer entry is cut."
    )
    gates: list[Gate] = Field(
        default_factory=list, max_length=20, description="Conditions on the story's state."
    )

    def dump(self) -> dict[str, Any]:
        """The stored form: the basic fields always, the rest only where not the default
        (so a plain card stays as small as it was, and a file says what it changes)."""
        data = self.model_dump(exclude={"gates"}, exclude_defaults=True)
        data = {**{k: getattr(self, k) for k in BASIC}, **data}
        if self.gates:
            data["gates"] = [g.dump() for g in self.gates]
        return data

    def view(self) -> dict[str, Any]:
        """Every field, defaults included (for forms)."""
        data = self.model_dump(exclude={"gates"})
        data["gates"] = [g.dump() for g in self.gates]
        return data


BASIC = ("type", "name", "entry", "triggers", "notes")


FIELDS = tuple(StoryCard.model_fields)


def load_card(raw: Mapping[str, Any]) -> StoryCard:
    """A stored card as a model; a card that no longer validates (hand-edited data) keeps
    what it can: the engine must never fail a turn over one bad card."""
    try:
        return StoryCard.model_validate(dict(raw))
    except ValidationError:
        good = {}
        for name in FIELDS:
            if name in raw:
                try:
                    StoryCard.model_validate({name: raw[name]})
                    good[name] = raw[name]
                except ValidationError:
                    continue
        return StoryCard.model_validate(good)


# ---------------------------------------------------------------------------- checks


def card_errors(raw: Any, rules: Mapping[str, Any] | None) -> list[str]:
    """Every mistake in one card, each starting with its field path; [] when valid."""
    try:
        card = StoryCard.model_validate(raw)
    except ValidationError as exc:
        return [
            "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip(".")
            + f": {e['msg']}"
            for e in exc.errors()
        ]
    errors = []
    if not card.entry.strip():
        errors.append("entry: a card needs an entry — it is the only part the model sees")
    for field in ("triggers", "secondary_triggers"):
        try:
            keys = parse_keys(getattr(card, field), card.case_sensitive, card.whole_words)
        except BadKey as exc:
            errors.append(f"{field}: {exc}")
            continue
        errors += [
            f"{field}: {why}"
            for key in keys
            if (why := weak_key(key, card.whole_words)) is not None
        ]
    if card.enabled and not card.constant and not card.gates and not card.delay_until_recursion:
        try:
            keys = parse_keys(card.triggers, card.case_sensitive, card.whole_words)
        except BadKey:
            keys = [None]  # reported above
        if not keys:
            errors.append(
                "triggers: a card needs at least one trigger word (or gates, or to be constant), or it can never appear"
            )
    for i, gate in enumerate(card.gates):
        errors += [f"gates[{i}]{e}" for e in gate_errors(gate, rules)]
    return errors


def _declared(rules: Mapping[str, Any] | None) -> dict[str, set[str]]:
    rules = rules or {}

    def ids(items: Any) -> set[str]:
        if isinstance(items, Mapping):
            return set(map(str, items))
        return {str(i.get("id")) for i in items or [] if isinstance(i, Mapping)}

    return {
        "flags": ids(rules.get("flags")),
        "milestones": ids(rules.get("milestones")),
        "entities": ids(rules.get("entities")) | {"player"},
        "threads": ids(rules.get("threads")),
    }


def stat_bands(rules: Mapping[str, Any] | None, path: str) -> list[str] | None:
    """The band labels of the stat at `path` (world.x, player.x, npc.<id>.x), or None when
    the rules declare no such stat."""
    stats = (rules or {}).get("stats") or {}
    parts = path.split(".")
    if len(parts) == 2 and parts[0] in ("world", "player"):
        stat = (stats.get(parts[0]) or {}).get(parts[1])
    elif len(parts) == 3 and parts[0] == "npc":
        stat = ((stats.get("npcs") or {}).get(parts[1]) or {}).get(parts[2])
    else:
        return None
    if not isinstance(stat, Mapping):
        return None
    return [
        str(b[2]) for b in stat.get("bands") or [] if isinstance(b, list | tuple) and len(b) == 3
    ]


def gate_errors(gate: Gate, rules: Mapping[str, Any] | None) -> list[str]:
    """A gate's mistakes against the rules, each starting with `.field`. With no rules
    (a narrative-only story) every gate is a mistake: there is no state to read."""
    if rules is None:
        return [": this story has no state rules, so a gate has nothing to read"]
    known = _declared(rules)

    def unknown(what: str, have: set[str]) -> str:
        listed = ", ".join(sorted(have)[:12]) or "none declared"
        return f".id: no {what} '{gate.id}' in the rules (known: {listed})"

    errors = []
    kind = gate.kind
    if kind == "flag" and gate.id not in known["flags"]:
        errors.append(unknown("flag", known["flags"]))
    elif kind == "milestone" and gate.id not in known["milestones"]:
        errors.append(unknown("milestone", known["milestones"]))
    elif kind in ("location", "status", "item") and gate.id not in known["entities"]:
        errors.append(unknown("entity", known["entities"]))
    elif kind == "thread":
        if gate.id not in known["threads"]:
            errors.append(unknown("thread", known["threads"]))
        if gate.is_ and gate.is_ not in ("open", "resolved", "failed"):
            errors.append(".is: a thread is 'open', 'resolved' or 'failed'")
    elif kind == "status" and not gate.is_.strip():
        errors.append(".is: name the status the entity must have (e.g. 'dead')")
    elif kind == "stat":
        bands = stat_bands(rules, gate.id)
        if bands is None:
            errors.append(
                f".id: no stat '{gate.id}' in the rules (write world.x, player.x or npc.<id>.x)"
            )
        elif gate.band and gate.band not in bands:
            errors.append(
                f".band: the stat '{gate.id}' has no band '{gate.band}' (its bands: {', '.join(bands) or 'none'})"
            )
        if not gate.band and gate.min is None and gate.max is None:
            errors.append(".band: give a band, or a min and/or max")
        if gate.min is not None and gate.max is not None and gate.min > gate.max:
            errors.append(f".max: must be ≥ min ({gate.min:g})")
    if kind in ("location", "item") and gate.who and gate.who not in known["entities"]:
        errors.append(f".who: no entity '{gate.who}' in the rules")
    if kind not in ("location", "item") and gate.who:
        errors.append(".who: only location and item gates name who")
    if kind != "stat" and (gate.band or gate.min is not None or gate.max is not None):
        errors.append(".band: only stat gates have a band or a range")
    if kind in ("flag", "milestone", "location", "item", "stat") and gate.is_:
        errors.append(f".is: a {kind} gate has no 'is' (use 'not' to turn it around)")
    return errors


# ---------------------------------------------------------------------------- words


def gate_words(gate: Gate) -> str:
    """A gate as a sentence fragment: `the flag ferry_hired is set`."""
    neg = gate.not_
    who = gate.who or "player"
    kind = gate.kind
    if kind == "flag":
        return f"the flag {gate.id} is {'not set' if neg else 'set'}"
    if kind == "milestone":
        return f"the milestone {gate.id} is {'not yet reached' if neg else 'reached'}"
    if kind == "location":
        return f"{who} is {'not ' if neg else ''}at {gate.id}"
    if kind == "status":
        return f"{gate.id}'s status is {'not ' if neg else ''}'{gate.is_}'"
    if kind == "thread":
        return f"the thread {gate.id} is {'not ' if neg else ''}{gate.is_ or 'open'}"
    if kind == "item":
        return f"{who} {'does not hold' if neg else 'holds'} {gate.id}"
    if gate.band:
        return f"{gate.id} is {'not ' if neg else ''}in the band '{gate.band}'"
    lo = "" if gate.min is None else f"{gate.min:g}"
    hi = "" if gate.max is None else f"{gate.max:g}"
    span = f"between {lo} and {hi}" if lo and hi else (f"at least {lo}" if lo else f"at most {hi}")
    return f"{gate.id} is {'not ' if neg else ''}{span}"


def rules_in_words(card: StoryCard, window_turns: int = 4) -> list[str]:
    """The card's effective rules as plain sentences, for the cards panel and the editor."""
    if not card.enabled:
        return ["Disabled: this card never fires."]
    try:
        keys = parse_keys(card.triggers, card.case_sensitive, card.whole_words)
        secondary = parse_keys(card.secondary_triggers, card.case_sensitive, card.whole_words)
    except BadKey as exc:
        return [f"Never fires: {exc}"]
    lines = []
    how = ", ".join(
        w
        for w in (
            "whole words" if card.whole_words else "",
            "case-sensitive" if card.case_sensitive else "",
        )
        if w
    )
    how = f" ({how})" if how else ""
    depth = window_turns if card.scan_depth is None else card.scan_depth
    where = "your action" + (
        f" and the last {depth} turn{'s' if depth != 1 else ''}" if depth else ""
    )
    if card.constant:
        lines.append("Always fires (constant).")
    elif card.delay_until_recursion:
        lines.append(f"Fires only when another card's text mentions {_listed(keys) or 'it'}{how}.")
    elif keys:
        first = f"Fires when {where} mention{'s' if not depth else ''} {_listed(keys)}{how}"
        if secondary:
            first += f", {LOGIC_WORDS[card.logic]} {_listed(secondary, 'and' if card.logic in ('and_all', 'not_all') else 'or')}"
        lines.append(first + ".")
    else:
        lines.append("Fires whenever its gates hold.")
    if card.gates:
        lines.append("Only while " + "; and ".join(gate_words(g) for g in card.gates) + ".")
    if card.probability < 100:
        lines.append(
            f"Then a {card.probability}% chance, rolled once per turn (a retry rolls the same)."
        )
    if card.delay:
        lines.append(f"Not before turn {card.delay}.")
    if card.sticky:
        lines.append(
            f"Once fired, stays for {card.sticky} more turn{'s' if card.sticky != 1 else ''}."
        )
    if card.cooldown:
        lines.append(
            f"Then cannot fire for {card.cooldown} turn{'s' if card.cooldown != 1 else ''}."
        )
    if card.group.strip():
        way = "by order" if card.group_override else f"weight {card.group_weight}"
        lines.append(f"Competes in group {card.group.strip()} ({way}): one card per group is sent.")
    place = POSITION_WORDS[card.position].format(depth=card.depth)
    lines.append(
        f"Placed {place}, order {card.order}"
        + (f", cut to {card.max_tokens} tokens." if card.max_tokens else ".")
    )
    if card.prevent_recursion:
        lines.append("Its text does not trigger other cards.")
    if card.exclude_recursion:
        lines.append("Other cards' text cannot trigger it.")
    return lines


def _listed(keys: list[Any], joiner: str = "or") -> str:
    shown = [f"'{k.text}'" for k in keys]
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + f" {joiner} " + shown[-1]
