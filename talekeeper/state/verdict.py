"""A verdict: what one proposed event would do, decided before anything is done.

Validation produces verdicts and never mutates; `apply.execute` carries out a verdict's
`change` and never refuses. `Context` carries what every check needs besides the
document.
"""

from __future__ import annotations

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


@dataclass
class Context:
    """What every check needs besides the document: the rules, the turn, who is asking,
    and how far the story already moved each stat in this turn (for the per-turn cap)."""

    rules: Rules
    turn: int
    authority: str
    moved: dict[str, float] = field(default_factory=dict)

    @property
    def paced(self) -> bool:
        return self.authority == "story"


def reject(
    layer: Layer, reason: str, correction: str, target: str | None = None, hidden: bool = False
) -> Verdict:
    return Verdict("rejected", reason, target, correction=correction, layer=layer, hidden=hidden)


def noop(reason: str, target: str, value: Any) -> Verdict:
    return Verdict("applied", reason, target, value, value)
