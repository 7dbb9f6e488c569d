"""Which children of one turn tell the same turn again (its takes), and which are steps of
their own. Pure: `takes` reads the takes of a turn with it, `line_ends` which leaves end a
line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

CORRECTION = "correction"
STEPS = frozenset({CORRECTION, "update"})
"""A step of the player's own (a state correction, an update from the scenario): never a
take of the turn beside it, its own only take."""


class Sibling(NamedTuple):
    id: int
    action_kind: str
    action_text: str
    take_of: int | None


def families(siblings: Iterable[Sibling]) -> dict[int, int]:
    """Each child of one parent → the first turn of its family (the turn it tells again).

    A retry or an edit joins the family of the turn it retells (`take_of`); a turn written
    before that was recorded (or whose original is gone) joins an earlier sibling with the
    same action, as the older rule had it; anything else — a new action — is a family of its
    own. A correction is never a take."""
    root: dict[int, int] = {}
    first_with: dict[tuple[str, str], int] = {}
    for s in sorted(siblings, key=lambda s: s.id):
        if s.action_kind in STEPS:
            root[s.id] = s.id
            continue
        if s.take_of is not None and s.take_of in root:
            root[s.id] = root[s.take_of]
        else:
            root[s.id] = first_with.get((s.action_kind, s.action_text), s.id)
        first_with.setdefault((s.action_kind, s.action_text), root[s.id])
    return root
