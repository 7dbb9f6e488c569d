"""Takes: the same moment told again — a retry, an edited narration, an edited action.

The takes of a turn are those children of its parent that tell it again, oldest first
(`families`): a retry or an edit records the turn it retells (`Node.take_of`); a different
action written after going back is a turn of its own that begins a line (the story map
shows it), not another take. `‹ 2/3 ›` is the 1-based position of a turn among its takes. Choosing a take moves the head onto it, so the
transcript, the state and the next prompt are that take's. Nothing is deleted: the other
takes, and whatever was written below them, stay where they are.

A state correction is a step of the story (Undo takes it back), but not a take of the turn
it sits beside: an undone correction next to the turn written after it is not "take 1/2"
of that turn. So a correction is its own only take, and a turn's takes skip corrections.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from talekeeper.store.models import Adventure, Node
from talekeeper.story import tree
from talekeeper.story.families import CORRECTION, STEPS, Sibling, families
from talekeeper.story.tree import TreeError

__all__ = ["CORRECTION", "STEPS", "Sibling", "families"]  # (kept here too, where they began)


@dataclass(frozen=True)
class TakePosition:
    index: int  # 1-based
    count: int
    previous_id: int | None
    next_id: int | None

    def as_dict(self) -> dict[str, int | None]:
        return {
            "index": self.index,
            "count": self.count,
            "previous_id": self.previous_id,
            "next_id": self.next_id,
        }


@dataclass(frozen=True)
class Take:
    id: int
    index: int
    action_kind: str
    action_text: str
    narration: str
    model: str
    created_at: datetime | None
    has_future: bool  # something was written below this take


_n = Node.__table__.c
_SIBLINGS = select(_n.parent_id, _n.id, _n.action_kind, _n.action_text, _n.take_of).where(
    _n.adventure_id == bindparam("adventure"),
    _n.parent_id.in_(bindparam("parents", expanding=True)),
)  # (built once on the table: a take step or a page runs it, and building costs more)


def _siblings(session: Session, adventure_id: int, parent_ids: Iterable[int]) -> list[Any]:
    return list(
        session.execute(_SIBLINGS, {"adventure": adventure_id, "parents": list(parent_ids)})
    )


def _family_of(rows: list[Any], node_id: int) -> list[Any]:
    """The rows (siblings) in `node_id`'s family, oldest first."""
    root = families(Sibling(r.id, r.action_kind, r.action_text, r.take_of) for r in rows)
    return sorted((r for r in rows if root[r.id] == root[node_id]), key=lambda r: r.id)


def sibling_ids(session: Session, node: Node) -> list[int]:
    """The ids of `node`'s takes, oldest first (the opening is its own only take)."""
    if node.parent_id is None or node.action_kind in STEPS:
        return [node.id]
    rows = _siblings(session, node.adventure_id, [node.parent_id])
    return [r.id for r in _family_of(rows, node.id)]


def takes_of(session: Session, node: Node) -> list[Take]:
    """Every take of `node`'s turn, oldest first, without their state snapshots."""
    if node.parent_id is None or node.action_kind in STEPS:
        rows = [node]
    else:
        family = {
            r.id
            for r in _family_of(_siblings(session, node.adventure_id, [node.parent_id]), node.id)
        }
        rows = sorted(
            session.execute(
                select(
                    Node.id,
                    Node.action_kind,
                    Node.action_text,
                    Node.narration,
                    Node.model,
                    Node.created_at,
                    Node.active_child_id,
                ).where(Node.adventure_id == node.adventure_id, Node.id.in_(family))
            ),
            key=lambda row: row.id,
        )
    return [
        Take(
            id=row.id,
            index=i + 1,
            action_kind=row.action_kind,
            action_text=row.action_text,
            narration=row.narration,
            model=row.model,
            created_at=row.created_at,
            has_future=row.active_child_id is not None,
        )
        for i, row in enumerate(rows)
    ]


def take_positions(
    session: Session, nodes: Sequence[Any], adventure_id: int | None = None
) -> dict[int, TakePosition]:
    """`‹ i/n ›` for each of `nodes` (a page of a transcript: nodes, or rows with their
    `id`, `parent_id` and `action_kind`, then with `adventure_id`), in one indexed query.

    Sorted here, not in SQL: an ORDER BY id would steer SQLite to the adventure_id index
    and a scan of the whole story instead of the (adventure_id, parent_id) index.
    """
    if not nodes:
        return {}
    parent_ids = {n.parent_id for n in nodes if n.parent_id is not None}
    by_parent: dict[int, list[Any]] = {}
    adventure = adventure_id if adventure_id is not None else nodes[0].adventure_id
    for row in _siblings(session, adventure, parent_ids) if parent_ids else []:
        by_parent.setdefault(row.parent_id, []).append(row)
    positions = {}
    for node in nodes:
        ids = [node.id]
        if node.parent_id is not None and node.action_kind not in STEPS:
            ids = [r.id for r in _family_of(by_parent.get(node.parent_id, []), node.id)] or ids
        i = ids.index(node.id)
        positions[node.id] = TakePosition(
            index=i + 1,
            count=len(ids),
            previous_id=ids[i - 1] if i > 0 else None,
            next_id=ids[i + 1] if i + 1 < len(ids) else None,
        )
    return positions


def choose(session: Session, adventure: Adventure, take: Node) -> Node:
    """Make `take` the one being read: the head moves onto it and Redo from its parent
    now follows it."""
    if take.parent_id is not None:
        parent = session.get(Node, take.parent_id)
        assert parent is not None
        tree.set_active(session, adventure, parent, take)
    tree.move_head(adventure, take)
    return take


def step(session: Session, adventure: Adventure, node: Node, offset: int) -> Node:
    """Choose the take `offset` places after (or, negative, before) `node` among its takes."""
    if offset == 0:
        raise TreeError("Step by 1 for the next take or by -1 for the previous one.")
    ids = sibling_ids(session, node)
    target = ids.index(node.id) + offset
    if not 0 <= target < len(ids):
        where = "first" if target < 0 else "last"
        if len(ids) == 1:
            raise TreeError("This turn has only one take. Retry it to write another.")
        raise TreeError(f"There is no take beyond this one: it is the {where} of {len(ids)}.")
    chosen = session.get(Node, ids[target])
    assert chosen is not None
    return choose(session, adventure, chosen)
