"""What became of each proposed change: the report `apply_proposal` returns.

Seed 001 is why this exists: the old engine recorded applied / clamped / rejected and
everything downstream read only "applied", so a refused change reached the player as an
ordinary chip and the model as a success. Here every proposed change ends as exactly one
`Outcome` with one of four statuses, and each refusal carries the words to show.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["applied", "limited", "unchanged", "rejected"]
"""applied: done as asked (or already true). limited: moved, but less than asked.
unchanged: valid, but already at its limit, so nothing moved. rejected: refused by a
layer; nothing changed."""

Layer = Literal["envelope", "allowlist", "shape", "reference", "rules", "canon"]
"""The validation layer that refused an event, in the order they run."""

LOST: tuple[Status, ...] = ("unchanged", "rejected")
"""Outcomes where what the model asked for was lost entirely. Only these are fed back
to the model: a partial limit is not, or the model chases the difference next turn."""


class Outcome(BaseModel):
    """One proposed change and what became of it.

    `reason` says what happened, for the player and the audit; `correction` (for
    unchanged and rejected) tells the model what to do instead, quoting the real limits
    and names. For a hidden stat neither quotes a number: the model must only ever see
    its band label. `before`/`after` carry the values for the audit and the UI.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int | None = Field(
        description="position in the proposal's events; None for the envelope"
    )
    type: str | None = None
    status: Status
    layer: Layer | None = None
    target: str | None = Field(
        None, description="what it changed, e.g. 'player.hp' or 'gwen.status'"
    )
    before: Any = None
    after: Any = None
    reason: str = ""
    correction: str | None = None
    hidden: bool = False
    event: Any = Field(None, description="the event as proposed")

    @property
    def lost(self) -> bool:
        return self.status in LOST


class Report(BaseModel):
    """Every outcome of one proposal, in proposal order (envelope notes first)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int
    authority: Literal["story", "player"]
    outcomes: tuple[Outcome, ...] = ()

    def with_status(self, *statuses: Status) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in statuses]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
