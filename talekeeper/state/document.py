"""The state document: what the campaign believes, as one JSON-serialisable value.

The document is genre-neutral on purpose. Nothing in it names hit points, classes or
currencies: a scenario's rules declare those, and the document only carries values under
the names the rules chose. A science-fiction campaign and a fantasy one produce the same
shapes.

It is stored whole on every story node, so restoring any position is one read. Only
code writes it: the model proposes events (see `events.py`), `apply.py` applies what the
validator accepted. Models here describe the *stored* shape; they forbid unknown fields
so a typo in stored data is found by `normalise`, not silently carried.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

VERSION = 1
"""The document version this engine writes. `normalise` reads it back."""

RECENT_EVENTS_WINDOW = 5
"""Recent events are a rolling window: the newest five lines, the oldest dropped."""

Scalar = str | int | float | bool
Authority = Literal["canon", "story", "player"]
"""Who established something. `canon` comes from the scenario, `story` from the model,
`player` from a manual correction. See `AUTHORITY_RANK`."""

AUTHORITY_RANK: dict[str, int] = {"story": 0, "canon": 1, "player": 2}
"""Higher outranks lower: a story event cannot withdraw a canon or player fact, and a
player correction can withdraw anything."""

PLAYER_ID = "player"
"""The one reserved entity id. Every document has the player, so possessions, facts and
stats can name them without the scenario declaring anything."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Entity(_Model):
    """A person, place, thing or group. `type` is a free label the scenario chooses."""

    id: str
    name: str
    type: str = "thing"
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    status: str = ""
    location: str | None = None
    conditions: list[str] = Field(default_factory=list)
    attributes: dict[str, Scalar] = Field(default_factory=dict)


class Fact(_Model):
    """Something established as true. Withdrawn facts stay, marked, so the audit and the
    prompt can say "no longer true" instead of letting the claim silently vanish."""

    id: str
    subject: str = ""
    """An entity id, or "" for a world-level fact (then `object` holds the sentence)."""
    predicate: str = ""
    object: str = ""
    value: Scalar | None = None
    authority: Authority = "story"
    status: Literal["active", "withdrawn"] = "active"
    turn: int = 0
    withdrawn_turn: int | None = None
    withdrawn_by: Authority | None = None
    withdrawn_reason: str = ""


class Relationship(_Model):
    """How one entity stands to another, directionally (`source` → `kind` → `target`)."""

    id: str
    source: str
    kind: str
    target: str
    note: str = ""
    authority: Authority = "story"
    status: Literal["active", "ended"] = "active"
    turn: int = 0
    ended_turn: int | None = None


class Objective(_Model):
    id: str
    text: str
    done: bool = False
    turn: int | None = None


class Thread(_Model):
    """Open story business; a quest is a thread with objectives."""

    id: str
    title: str
    kind: Literal["thread", "quest"] = "thread"
    status: Literal["open", "resolved", "failed"] = "open"
    objectives: list[Objective] = Field(default_factory=list)
    opened: int = 0
    closed: int | None = None
    note: str = ""


class Scene(_Model):
    location: str | None = None
    present: list[str] = Field(default_factory=list)
    time: str = ""
    summary: str = ""


class StatValue(_Model):
    """A live stat value. `changed` is the turn the story last moved it (cooldowns)."""

    value: int | float | str
    changed: int | None = None


class Stats(_Model):
    world: dict[str, StatValue] = Field(default_factory=dict)
    player: dict[str, StatValue] = Field(default_factory=dict)
    npcs: dict[str, dict[str, StatValue]] = Field(default_factory=dict)


class RecentEvent(_Model):
    turn: int
    text: str


class Moment(_Model):
    """A memorable event, weighted 1–10. Append-only: moments stack, they never expire."""

    id: str
    text: str
    weight: int = Field(ge=1, le=10)
    turn: int


class Document(_Model):
    """The whole state at one story position.

    `milestones` maps every declared milestone id to the turn it was reached, or null.
    `possessions` maps an item's entity id to its one holder's id: one holder per item is
    structural, not a rule that could be broken.
    """

    version: int = VERSION
    entities: dict[str, Entity] = Field(default_factory=dict)
    possessions: dict[str, str] = Field(default_factory=dict)
    facts: list[Fact] = Field(default_factory=list)
    relationships: list[Relationship] = Field(default_factory=list)
    threads: dict[str, Thread] = Field(default_factory=dict)
    scene: Scene = Field(default_factory=Scene)
    flags: dict[str, bool] = Field(default_factory=dict)
    milestones: dict[str, int | None] = Field(default_factory=dict)
    stats: Stats = Field(default_factory=Stats)
    recent_events: list[RecentEvent] = Field(default_factory=list)
    moments: list[Moment] = Field(default_factory=list)

    def to_json(self) -> dict:
        """The plain-JSON form to store. `normalise` reads it back unchanged."""
        return self.model_dump(mode="json")

    def may_be_here(self, eid: str) -> bool:
        """Nothing in the state puts `eid` in a place other than the scene's: someone the
        recent story names is in view only then (the notes must not say "here" of a man
        the state has at his cottage)."""
        place = self.entities[eid].location
        return not place or place == self.scene.location or place not in self.entities


SECTIONS: tuple[str, ...] = tuple(name for name in Document.model_fields if name != "version")
"""The document's sections, in order. `normalise` checks and repairs each on its own."""


def player_entity(
    name: str = "You", description: str = "", aliases: list[str] | None = None
) -> Entity:
    """The player's entity. "you" is always an alias, so the model can say "you"."""
    names = list(aliases or [])
    if name.lower() != "you" and not any(a.lower() == "you" for a in names):
        names.append("you")
    return Entity(id=PLAYER_ID, name=name, type="player", aliases=names, description=description)


def empty_document() -> Document:
    """A document with nothing in it but the player."""
    return Document(entities={PLAYER_ID: player_entity()})
