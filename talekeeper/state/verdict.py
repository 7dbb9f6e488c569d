"""A verdict: what one proposed event would do, decided before anything is done.

Validation produces verdicts and never mutates; `apply.execute` carries out a verdict's
`change` and never refuses. `Context` carries what every check needs besides the
document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .report import Layer, Status
from .rules import Rules


@dataclass(frozen=True)
class Verdict:
    status: Status
    reason: str
    target: str | None = None
    before: Any = None
    after: Any = None
    correction: str | None = None
    layer: Layer | None = None
    hidden: bool = False
    change: dict[str, Any] | None = None


@dataclass(frozen=True)
class Heard:
    """What the turn's narration has people do, and the states it tells outright
    (`telling.heard`): a model's status that forbids what the narration has someone do,
    and that it never tells, is the model's babble, not the story's."""

    does: dict[str, dict[str, str]] = field(default_factory=dict)
    """Who does what, by capacity (speak, move, use, act): the sentence that says so."""
    tells: dict[str, frozenset[str]] = field(default_factory=dict)
    """Who the narration says is dead, asleep, unconscious or awake (labels, casefolded)."""


@dataclass
class Context:
    """What every check needs besides the document: the rules, the turn, who is asking,
    how far the story already moved each stat in this turn (for the per-turn cap), and
    what the turn's narration says people do (`Heard`, when a narration came with it)."""

    rules: Rules
    turn: int
    authority: str
    moved: dict[str, float] = field(default_factory=dict)
    hear: Callable[[], Heard] | None = None
    """Reads the narration when a check first needs it (most proposals set no status)."""
    _heard: Heard | None = field(default=None, init=False, repr=False)

    @property
    def paced(self) -> bool:
        return self.authority == "story"

    @property
    def heard(self) -> Heard | None:
        if self._heard is None and self.hear is not None:
            self._heard = self.hear()
        return self._heard


def reject(
    layer: Layer, reason: str, correction: str, target: str | None = None, hidden: bool = False
) -> Verdict:
    return Verdict("rejected", reason, target, correction=correction, layer=layer, hidden=hidden)


def noop(reason: str, target: str, value: Any) -> Verdict:
    return Verdict("applied", reason, target, value, value)
