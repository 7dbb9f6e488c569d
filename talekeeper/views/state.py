"""Views of the state engine: the state panel, corrections, the audit trail, the canon log,
character creation, and the published JSON Schemas.

Built by `service/corrections.py` (with `state_engine.state_view`), `state/canon.py` and
`state/creation.py`. The state document itself is the state engine's own model
(`state.document.Document`, published at `/api/schemas/document`).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from talekeeper.state.document import (
    Document,
    Entity,
    Fact,
    Moment,
    RecentEvent,
    Relationship,
    Scene,
    Thread,
)
from talekeeper.views.base import Sparse, View
from talekeeper.views.story import Change, Story


class Possession(View):
    """Who holds an item (one holder per item)."""

    item: str
    item_name: str
    holder: str
    holder_name: str


class StatRow(View):
    """A declared stat with its value, range and band word. A hidden stat (luck) has its
    band word only: no value, no range."""

    owner: str = Field(description="world, player, or the character's id.")
    path: str = Field(description="e.g. `player.hp`, `npc.gwen.trust`.")
    name: str
    label: str = Field(description="As the player reads it: `Maren's trust`, `Lamp oil`.")
    kind: str
    value: Any = Field(description="Null for a hidden stat.")
    min: int | float | None
    max: int | float | None
    band: str | None = Field(description="The band word the model reads for this value.")
    hidden: bool
    desc: str


class FlagRow(View):
    """A flag the rules declare, and whether it is set."""

    name: str
    value: bool
    desc: str


class MilestoneRow(View):
    """A milestone the rules declare, and the turn it was reached."""

    id: str
    reached_at: int | None = Field(description="The turn it was reached; null: not yet.")
    desc: str


class StatePanel(View):
    """The state grouped the way the state panel shows it."""

    scene: Scene
    entities: dict[str, list[Entity]] = Field(
        description="Entities by type (person, place, item, …)."
    )
    possessions: list[Possession]
    facts: list[Fact]
    relationships: list[Relationship]
    threads: list[Thread]
    stats: list[StatRow]
    flags: list[FlagRow]
    milestones: list[MilestoneRow]
    recent_events: list[RecentEvent]
    moments: list[Moment]


class StateAtHead(View):
    """The state at the moment being read, grouped for display, plus its raw document."""

    head_id: int
    view: StatePanel
    document: Document = Field(description="The state document (`/api/schemas/document`).")
    changes: list[Change] = Field(description="The head turn's change chips.")


class HeadState(View):
    """The state at the head as the State panel and `talekeeper play` read it: what the
    API answers (`at`), and what they show beside it."""

    at: StateAtHead = Field(description="The state at the head, as `GET …/state` answers it.")
    has_rules: bool = Field(description="Whether the adventure declares rules.")
    names: dict[str, str] = Field(description="Each entity's name by its id.")
    scene_note: str | None = Field(
        description="Why the scene shown is not where the player is, when they disagree."
    )


class Corrected(View):
    """A correction written as its own step of the story."""

    changes: list[Change] = Field(description="Each event's verdict.")
    story: Story = Field(description="The story's last turns, the correction included.")


class AuditEntry(View):
    """One turn's proposal: raw text, parse error, events, and what became of them."""

    turn_id: int
    depth: int
    source: str | None = Field(description="Who proposed it: `model`, `player` or `player_edit`.")
    raw: str | None = Field(description="The state block as the model wrote it.")
    parse_error: str | None = Field(description="Why the block could not be read, if it could not.")
    events: list[Any] | None = Field(
        description="The proposed events, as written (`/api/schemas/proposal`)."
    )
    changes: list[Change]
    read: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Changes read from the narration (not the model's): each with the "
        "sentence that told it, its events and `from` (`narration`, or `action`: the "
        "player's own change their Do action stated and the narration left unsaid); their "
        "verdicts are among `changes` (`by: narration`).",
    )
    contradictions: list[dict[str, Any]] = Field(
        default_factory=list,
        description="What the narration said that the state does not: kind, subject, says, "
        "state, line, the rule that fired and the events `accept` would make.",
    )
    retold: dict[str, Any] | None = Field(
        None,
        description="When the turn was told again once (setting `contradictions: retry`): the "
        "first telling's narration and its contradictions.",
    )


class CanonPlayer(View):
    """The player's character as every role may know it."""

    name: str
    class_id: str | None
    luck_descriptor: str | None = Field(description="A hidden stat, as its band word only.")


class CanonPlace(View):
    """Where the player is."""

    id: str
    name: str


class CanonCompanion(View):
    """A companion in the party."""

    id: str
    name: str
    disposition: Any = Field(description="A number, or a band word for a hidden stat.")


class CanonQuest(View):
    """A quest or thread, as every role may know it."""

    id: str
    name: str
    status: str = Field(description="active, complete or failed.")
    objective: str | None = Field(description="The first objective not yet done.")


class CanonMoment(View):
    """A memorable moment, weighted 1–10."""

    id: str
    text: str
    weight: int
    turn: int


class CanonLog(View):
    """What every model role reads (`/api/schemas/canon-log`)."""

    schema_version: int
    player: CanonPlayer
    location: CanonPlace | None
    party: list[CanonCompanion]
    recent_events: list[str]
    established_facts: list[str]
    active_quests: list[CanonQuest]
    moments: list[CanonMoment] = Field(description="The weightiest and most recent first.")


class CreationStat(View):
    """A stat the player makes at creation, with its range."""

    name: str
    min: int | float | None
    max: int | float | None
    desc: str


class CreationOptions(View):
    """What character creation offers: classes, stats and how they are made."""

    classes: list[dict[str, Any]] = Field(
        description="The classes allowed here, as the scenario declares them (`id`, `name`, …)."
    )
    method: str | None = Field(description="How stats are made: point-buy or rolled.")
    points: int | None = Field(description="Point-buy: points to spend.")
    dice: int
    sides: int
    stats: list[CreationStat]
    default_name: str


class CharacterOptions(View):
    """What character creation offers in a scenario and origin."""

    creation: CreationOptions | None = Field(
        description="Null when the scenario has no character creation."
    )


class JsonSchemaDocument(Sparse):
    """A published JSON Schema (draft 2020-12), as a document of its own."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_: str | None = Field(None, alias="$schema")
    id_: str | None = Field(None, alias="$id")
    title: str | None = None
    description: str | None = None
    type: str | None = None
    properties: dict[str, Any] | None = None
    required: list[str] | None = None


class UpdatePart(View):
    """One part of the canon an update from the scenario can take."""

    key: str = Field(description="What to send in `take` to take it.")
    label: str
    changed: bool = Field(description="Whether the scenario has it otherwise than the adventure.")
    changes: list[str] = Field(description="What would change, in words.")


class ScenarioUpdatePreview(View):
    """What updating an adventure from its scenario would change (nothing is written)."""

    scenario: str = Field(description="The scenario's title.")
    up_to_date: bool = Field(description="Nothing would change.")
    parts: list[UpdatePart]
    findings: list[str] = Field(
        description="What of the story's state does not fit the newer rules, and what would "
        "become of it (nothing is dropped silently)."
    )


class ScenarioUpdated(View):
    """An update from the scenario, written as one step of the story (Undo takes it back)."""

    took: list[str] = Field(description="The parts taken, in words.")
    findings: list[str]
    story: Story = Field(description="The story's last turns, the update's step included.")
