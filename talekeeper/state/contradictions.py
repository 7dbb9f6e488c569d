"""The contradiction guard: what a narration asserts against what the state says.

"It forgot that she died", "I never had that sword": the first complaint about every AI
storyteller. From the reader's asserted claims (`reader.py`) this finds the ones the
state at that moment cannot allow — the turn's start, plus the changes accepted in the
same turn (the model's events and what the narration itself told, in the order it told
them):

    presence  someone absent, or elsewhere, acting or speaking in the scene
    place     the player placed somewhere they are not, with no move that took them
    item      an item used, handed over or put down by someone who does not hold it
    status    someone acting against a status that forbids it (the scenario's
              `statuses`: the dead, the asleep, the unconscious, the bound)

A claim clashes only when it fits neither the state as it stood at its sentence nor the
state after the turn, so a change the model made in the same turn is never reported as
its own contradiction. Each clash says, in words, what the narration says and what the
state says, and carries the events that would make the state agree ("It's right —
update the state"), for the same validator as a player's correction. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .document import PLAYER_ID, Document
from .reader import Claim
from .rules import Rules
from .situation import Situation
from .told import ToldChange

KINDS = ("presence", "place", "item", "status")
CAN_NOT = {
    "speak": "cannot speak",
    "move": "cannot move",
    "use": "cannot handle anything",
    "act": "cannot act",
}
MAX_SAYS = 160


@dataclass(frozen=True)
class Contradiction:
    kind: str
    subject: str
    """Who (or what) it is about, by name."""
    says: str
    """The sentence that says it."""
    state: str
    """What the state says instead, in words."""
    line: str
    """The warning shown under the turn: "Tobin is at the keeper's cottage, not here"."""
    rule: str
    """Which check fired, for Insights."""
    events: tuple[dict[str, Any], ...] = ()
    """What "It's right — update the state" proposes."""
    about: str = ""
    """The id of who or what it is about."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "about": self.about,
            "subject": self.subject,
            "says": self.says,
            "state": self.state,
            "line": self.line,
            "rule": self.rule,
            "events": list(self.events),
        }


class _Names:
    def __init__(self, *docs: Document) -> None:
        self.docs = docs

    def __call__(self, eid: str | None, start: bool = False) -> str:
        if eid == PLAYER_ID:
            return "You" if start else "you"
        for doc in self.docs:
            entity = doc.entities.get(eid or "")
            if entity is not None:
                name = " ".join(entity.name.split())
                if not start and name[:4] in ("The ", "A ", "An ") or name[:3] == "An ":
                    name = name[0].lower() + name[1:]
                return name
        return "someone"

    def thing(self, eid: str) -> str:
        """An item's name as a noun phrase: "the brass key", "the lamp-mender's tools"."""
        name = self(eid)
        lowered = name.casefold()
        if lowered.startswith(("the ", "a ", "an ", "your ")) or name[:1].isupper():
            return name
        return "the " + name


def _is(subject: str) -> str:
    return "are" if subject == "You" else "is"


def _has(subject: str) -> str:
    return "have" if subject == "You" else "has"


def short(sentence: str) -> str:
    """A sentence as a warning or a refusal quotes it: one line, at most `MAX_SAYS`."""
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= MAX_SAYS else sentence[: MAX_SAYS - 1] + "…"


def find_contradictions(
    claims: list[Claim],
    start: Document,
    final: Document,
    rules: Rules,
    told: list[ToldChange] | None = None,
) -> list[Contradiction]:
    """Every clash between the asserted claims and the state, at most one per thing."""
    names = _Names(final, start)
    first = Situation.of(start, rules)
    now = first.copy()
    after = Situation.of(final, rules)
    told_at = {c.claim.index: c for c in told or [] if c.source == "narration"}
    for change in told or []:  # the player's action came before every sentence of it
        if change.source != "narration":
            now.apply(list(change.events))
    out: list[Contradiction] = []
    seen: set[tuple[str, str]] = set()
    for claim in claims:
        if claim.asserted:
            found = _check(claim, (first, now, after), rules, names)
            if found is not None:
                key = (found.kind, found.subject)
                if key not in seen:
                    seen.add(key)
                    out.append(found)
        change = told_at.get(claim.index)
        if change is not None:
            now.apply(list(change.events))
    return out


def capacity(claim: Claim) -> str:
    """What a claim has its subject do, as statuses forbid it: speak, move, use, act, or
    rest (what the asleep and the dead may do); "" when it is no deed."""
    if claim.kind == "acts":
        return claim.act or ""
    if claim.kind in ("moves", "arrives", "leaves"):
        return "move"
    if claim.kind in ("uses", "gives", "takes", "drops"):
        return "use"
    return ""


def _check(
    claim: Claim, views: tuple[Situation, Situation, Situation], rules: Rules, names: _Names
) -> Contradiction | None:
    """The clash a claim makes with every one of `views` — the turn's start, the state
    at its sentence, the state after the turn — or None when any of them allows it."""
    first, now, after = views
    s = claim.subject
    can = capacity(claim)
    if can and can != "rest":
        label = now.forbidden(s, can, rules)
        if label is not None and all(v.forbidden(s, can, rules) for v in (first, after)):
            who = names(s, start=True)
            state = f"{who} {_is(who)} {label}"
            fix = (
                [{"type": "set_status", "entity": s, "status": rules.normal_status()}]
                if now.status.get(s, "").casefold() == label.casefold()
                else [{"type": "set_conditions", "entity": s, "remove": [label]}]
            )
            return Contradiction(
                "status",
                names(s, start=True),
                short(claim.sentence),
                state,
                f"{state} and {CAN_NOT[can]}",
                f"status: '{label}' forbids {can} ({claim.verb})",
                tuple(fix),
                s,
            )
    if claim.kind == "acts" and s != PLAYER_ID and claim.where is not None:
        return _presence(claim, claim.where, views, names)
    if claim.kind == "at" and s != PLAYER_ID and claim.object:
        return _presence(claim, claim.object, views, names)
    if claim.kind == "at" and s == PLAYER_ID and claim.object:
        return _place(claim, claim.object, views, names)
    if claim.kind in ("uses", "gives", "takes", "drops") and claim.object:
        return _item(claim, views, names)
    return None


def _fits_place(view: Situation, s: str, where: str) -> bool | None:
    """True when the view has `s` at `where`, False when it has them elsewhere (or, for
    here, not in the scene), None when it cannot say."""
    if where == "here" or where == view.here:
        if view.is_here(s):
            return True
        return False
    place = view.place_of(s)
    if place is None:
        return None
    return place == where or view.within(where, place)


def _presence(
    claim: Claim, where: str, views: tuple[Situation, ...], names: _Names
) -> Contradiction | None:
    s = claim.subject
    now = views[1]
    if any(_fits_place(v, s, where) is not False for v in views):
        return None
    who = names(s, start=True)
    place = now.place_of(s)
    here = where == "here" or where == now.here
    state = f"{who} is at {names(place)}" if place else f"{who} is not here"
    line = (
        f"{state}, not here"
        if here and place
        else state
        if here
        else f"{state}, not at {names(where)}"
    )
    if here:
        fix = now.bring_here(s)
        rule = f"presence: {'elsewhere' if place else 'absent'}, yet {claim.verb} here"
    else:
        fix = [{"type": "set_location", "entity": s, "location": where}]
        rule = f"presence: at {place or 'an unknown place'}, yet said to be at {where}"
    return Contradiction("presence", who, short(claim.sentence), state, line, rule, tuple(fix), s)


def _place(
    claim: Claim, where: str, views: tuple[Situation, ...], names: _Names
) -> Contradiction | None:
    now = views[1]
    for view in views:
        if any(where == p or view.within(where, p) for p in view.player_places()):
            return None
    here = now.here or now.location.get(PLAYER_ID)
    state = f"You are at {names(here)}" if here else "You have not gone anywhere yet"
    line = f"{state}, not at {names(where)}" if here else f"You have not gone to {names(where)}"
    return Contradiction(
        "place",
        "You",
        short(claim.sentence),
        state,
        line,
        f"place: at {here or 'no known place'}, yet said to be at {where} with no move",
        tuple(now.move_player(where)),
        PLAYER_ID,
    )


def _item(claim: Claim, views: tuple[Situation, ...], names: _Names) -> Contradiction | None:
    s, item = claim.subject, claim.object or ""
    first, now, after = views
    if now.holder_allows(claim) or first.holder_allows(claim):
        return None
    final = after.holder.get(item)
    fits_after = {
        "uses": final in (None, s),
        "drops": final in (None, s),
        "gives": final in (None, s, claim.other),
        "takes": final == s or after.holder_allows(claim),
    }[claim.kind]
    if fits_after:
        return None
    holder = now.holder.get(item) or ""
    owner = names(holder, start=True)
    thing = names.thing(item)
    state = f"{owner} {_has(owner)} {thing}"
    fix: list[dict[str, Any]]
    if claim.kind == "gives" and claim.other:
        fix = [{"type": "set_possession", "item": item, "holder": claim.other}]
    elif claim.kind == "drops":
        fix = [{"type": "clear_possession", "item": item}]
    else:
        fix = [{"type": "set_possession", "item": item, "holder": s}]
    return Contradiction(
        "item",
        names(item),
        short(claim.sentence),
        state,
        f"{state}, not {names(s)}",
        f"item: held by {holder}, yet {claim.kind} by {s} ({claim.verb})",
        tuple(fix),
        item,
    )
