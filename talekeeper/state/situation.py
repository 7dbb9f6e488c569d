"""Who is where, holding what, able to do what: the part of the state a narration can
contradict or change, as a small view both consumers of the reader's claims walk.

The contradiction guard (`contradictions.py`) and the change reader (`told.py`) must agree
on what the state says at each point of a narration — "Tobin hands you the key. You turn
the key over." is no clash, because the first sentence's change holds by the second. So
both walk the claims in order over this view, applying each told change as they pass it,
and both ask the same questions of it (`holder_allows`, `forbidden`). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .document import PLAYER_ID, Document
from .reader import Claim, entity_kind
from .rules import Rules


@dataclass
class Situation:
    here: str | None
    """The player's place (the scene's location, else the player's own)."""
    present: set[str]
    location: dict[str, str | None]
    holder: dict[str, str]
    status: dict[str, str]
    conditions: dict[str, list[str]]
    companions: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, doc: Document, rules: Rules) -> Situation:
        player = doc.entities.get(PLAYER_ID)
        here = doc.scene.location or (player.location if player else None)
        people = {
            eid
            for eid in doc.entities
            if entity_kind(doc, rules, eid) == "person" or eid in doc.scene.present
        }
        return cls(
            here=here,
            present={eid for eid in doc.scene.present if eid in doc.entities},
            location={eid: e.location for eid, e in doc.entities.items()},
            holder=dict(doc.possessions),
            status={
                eid: e.status
                for eid, e in doc.entities.items()
                if eid in people or eid == PLAYER_ID
            },
            conditions={eid: list(e.conditions) for eid, e in doc.entities.items() if e.conditions},
            companions={m.id for m in rules.cast.values() if m.companion},
        )

    def copy(self) -> Situation:
        return Situation(
            self.here,
            set(self.present),
            dict(self.location),
            dict(self.holder),
            dict(self.status),
            {k: list(v) for k, v in self.conditions.items()},
            set(self.companions),
        )

    # --- questions ----------------------------------------------------------------

    def is_here(self, eid: str) -> bool:
        if eid == PLAYER_ID or eid in self.present:
            return True
        return self.here is not None and self.location.get(eid) == self.here

    def place_of(self, eid: str) -> str | None:
        """Where someone is: here when present, else their own location (None: unknown)."""
        if self.is_here(eid):
            return self.here
        return self.location.get(eid)

    def player_places(self) -> set[str]:
        return {p for p in (self.here, self.location.get(PLAYER_ID)) if p}

    def within(self, place: str, other: str) -> bool:
        """Whether `place` is `other` or lies inside it (a room in a house), or around it."""

        def chain(start: str | None) -> list[str]:
            seen: list[str] = []
            while start is not None and start not in seen:
                seen.append(start)
                start = self.location.get(start)
            return seen

        return other in chain(place) or place in chain(other)

    def labels(self, eid: str) -> list[str]:
        """Someone's status and conditions: the labels a status rule can forbid by."""
        return [x for x in (self.status.get(eid, ""), *self.conditions.get(eid, [])) if x]

    def forbidden(self, eid: str, capacity: str, rules: Rules) -> str | None:
        """The label (status or condition) that forbids `eid` this capacity, if any."""
        for label in self.labels(eid):
            rule = rules.status_rule(label)
            if rule is not None and capacity in rule.forbids:
                return label
        return None

    def holder_allows(self, claim: Claim) -> bool:
        """Whether who holds the item lets the claim be true: you use, give or put down
        only what you hold (or what nobody holds); you take what nobody holds, what is
        yours already, or what someone here has."""
        item = claim.object or ""
        holder = self.holder.get(item)
        if holder is None or holder == claim.subject:
            return True
        if claim.kind == "takes":
            return holder == claim.other or self.is_here(holder)
        return False

    # --- told changes ------------------------------------------------------------------

    def change_events(self, claim: Claim, rules: Rules) -> list[dict[str, Any]]:
        """The events a told change means from here, or [] when it changes nothing, or
        cannot be told (a dead man arriving, a key taken from someone far away)."""
        s, obj = claim.subject, claim.object
        if claim.kind == "moves" and s == PLAYER_ID:
            if obj is None or obj in self.player_places() or self.forbidden(s, "move", rules):
                return []
            return self.move_player(obj)
        if claim.kind == "moves" and obj is not None and obj == self.here:
            return self._arrive(s, rules)
        if claim.kind == "arrives":
            return self._arrive(s, rules)
        if claim.kind in ("moves", "leaves"):
            if self.forbidden(s, "move", rules):
                return []
            if self.is_here(s):
                events: list[dict[str, Any]] = []
                if s in self.present:
                    events.append({"type": "set_scene", "present": sorted(self.present - {s})})
                if obj != self.here and (obj is not None or self.location.get(s) is not None):
                    events.append({"type": "set_location", "entity": s, "location": obj})
                return events
            if claim.kind == "moves" and obj is not None and self.location.get(s) != obj:
                return [{"type": "set_location", "entity": s, "location": obj}]
            return []
        if claim.kind in ("takes", "gives", "drops"):
            if not self.holder_allows(claim) or self.forbidden(s, "use", rules):
                return []
            if not self.is_here(s):  # someone who is not here hands nothing over here
                return []
            item = obj or ""
            if claim.kind == "takes":
                return (
                    []
                    if self.holder.get(item) == s
                    else [{"type": "set_possession", "item": item, "holder": s}]
                )
            if claim.kind == "gives":
                recipient = claim.other
                if recipient is None or self.holder.get(item) == recipient:
                    return []
                return [{"type": "set_possession", "item": item, "holder": recipient}]
            if self.holder.get(item) != s:
                return []
            events = [{"type": "clear_possession", "item": item}]
            if self.here:
                events.append({"type": "set_location", "entity": item, "location": self.here})
            return events
        if claim.kind == "status":
            return self._status(s, obj or "", rules)
        return []

    def move_player(self, place: str) -> list[dict[str, Any]]:
        """The player goes to `place`: their location and the scene's, with the people
        there and the companions who travel with them (present, and placed nowhere)."""
        keep = {
            eid for eid in self.present if eid in self.companions or self.location.get(eid) is None
        }
        there = {eid for eid, loc in self.location.items() if loc == place and eid in self.status}
        present = sorted((keep | there) - {PLAYER_ID})
        return [
            {"type": "set_location", "entity": PLAYER_ID, "location": place},
            {"type": "set_scene", "location": place, "present": present},
        ]

    def bring_here(self, eid: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if self.here and self.location.get(eid) not in (None, self.here):
            events.append({"type": "set_location", "entity": eid, "location": self.here})
        elif self.here and self.location.get(eid) is None and eid not in self.companions:
            events.append({"type": "set_location", "entity": eid, "location": self.here})
        if eid not in self.present:
            events.append({"type": "set_scene", "present": sorted(self.present | {eid})})
        return events

    def _arrive(self, eid: str, rules: Rules) -> list[dict[str, Any]]:
        if eid == PLAYER_ID or self.is_here(eid) or self.forbidden(eid, "move", rules):
            return []
        return self.bring_here(eid)

    def _status(self, eid: str, word: str, rules: Rules) -> list[dict[str, Any]]:
        labels = [x.casefold() for x in self.labels(eid)]
        if word == "awake":
            if self.status.get(eid, "").casefold() not in ("asleep", "unconscious"):
                return []
            return [{"type": "set_status", "entity": eid, "status": rules.normal_status()}]
        if word in labels or "dead" in labels:
            return []
        label = next((name for name in rules.statuses if name.casefold() == word), None)
        return [] if label is None else [{"type": "set_status", "entity": eid, "status": label}]

    def apply(self, events: list[dict[str, Any]]) -> None:
        """Carry told events out on the view (they were checked as they were made)."""
        for e in events:
            kind = e["type"]
            if kind == "set_location":
                self.location[e["entity"]] = e["location"]
                if e["entity"] == PLAYER_ID:
                    self.here = e["location"]
            elif kind == "set_scene":
                if "location" in e:
                    self.here = e["location"]
                if "present" in e:
                    self.present = set(e["present"])
            elif kind == "set_possession":
                self.holder[e["item"]] = e["holder"]
            elif kind == "clear_possession":
                self.holder.pop(e["item"], None)
            elif kind == "set_status":
                self.status[e["entity"]] = e["status"]
