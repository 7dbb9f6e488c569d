"""The change reader: the clear changes a narration states outright, as ordinary events.

With a small model the state pass almost never proposes a change, so the truth never
moved unless the player corrected it by hand. But the narration says it: "you climb the
steps and go into the lighthouse", "Tobin hands you the brass key", "Maren leaves",
"Tobin falls asleep". From the reader's asserted claims (never a thought, a plan, a
question, a memory, speech in quotes) this proposes the events that make the state say
the same — the player's move, an item taken, received, dropped or handed over, a named
person's arrival, departure, sleep or death — to pass the same validator as the model's,
marked as read from the narration.

It never duplicates or overrides the model: a change whose target the model's accepted
events already touched is left to the model, and one that is already true proposes
nothing. A told change that the state cannot allow (a key taken from someone far away, a
dead man arriving) is no change: the contradiction guard reports it instead. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .document import Document
from .reader import Claim
from .report import Report
from .rules import Rules
from .situation import Situation

CHANGE_KINDS = frozenset({"moves", "arrives", "leaves", "takes", "gives", "drops", "status"})


@dataclass(frozen=True)
class ToldChange:
    """One change a narration told, with the sentence that told it and its events."""

    claim: Claim
    events: tuple[dict[str, Any], ...]
    source: str = "narration"
    """Where it was read: the narration, or the player's own action (`acted.py`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "sentence": self.claim.sentence,
            "kind": self.claim.kind,
            "events": list(self.events),
            "from": self.source,
        }


def event_targets(event: dict[str, Any]) -> set[str]:
    """What an event changes, named as the validator's outcomes name it."""
    kind = event.get("type")
    if kind in ("set_location", "set_status"):
        field = "location" if kind == "set_location" else "status"
        return {f"{event.get('entity')}.{field}"}
    if kind in ("set_possession", "clear_possession"):
        return {f"possession {event.get('item')}"}
    return set()


READ_TYPES = frozenset({"set_location", "set_possession", "clear_possession"})
"""Events whose every kind of change the reader can tell from the words: where someone or
something is, who holds what."""
READ_SCENE_FIELDS = ("location", "present")
READ_STATUSES = frozenset({"asleep", "dead"})
"""Statuses the reader tells ("falls asleep", "dies"), besides waking (the normal one)."""


def beyond_reading(event: Any, rules: Rules) -> Any | None:
    """What of a proposed event the reader could never have read from a narration (None:
    all of it is the reader's to tell): a stat, a switch, a goal, a fact, a moment, a
    status it has no words for — what an edited narration keeps from its earlier take,
    while where people are, who holds what, who is here and who sleeps or dies are read
    again from the edited words."""
    if not isinstance(event, dict):
        return event
    kind = event.get("type")
    if kind in READ_TYPES:
        return None
    if kind == "set_scene":
        rest = {k: v for k, v in event.items() if k not in READ_SCENE_FIELDS}
        return rest if set(rest) - {"type"} else None
    if kind == "set_status":
        status = str(event.get("status") or "").casefold()
        if status in READ_STATUSES or status == rules.normal_status().casefold():
            return None
    return event


def touched_targets(report: Report | None) -> set[str]:
    """The targets the model's own accepted events changed (or tried to)."""
    if report is None:
        return set()
    return {o.target for o in report.outcomes if o.target and o.status != "rejected"}


def told_changes(
    claims: list[Claim], settled: Document, rules: Rules, model_targets: set[str] = frozenset()
) -> list[ToldChange]:
    """The changes the claims tell, in order, over the state after the model's events."""
    view = Situation.of(settled, rules)
    out: list[ToldChange] = []
    for claim in claims:
        if not claim.asserted or claim.kind not in CHANGE_KINDS:
            continue
        events = view.change_events(claim, rules)
        if not events:
            continue
        if any(event_targets(e) & model_targets for e in events):
            continue
        view.apply(events)
        out.append(ToldChange(claim, tuple(events)))
    return out
