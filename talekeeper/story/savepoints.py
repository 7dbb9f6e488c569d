"""Save Points: a name (and note) the player gives one moment of the story.

A Save Point is only a pointer to a node. Creating one saves the moment being read (the
head, even after Undo). Restoring one moves the head there — one row read — and never
deletes or forks anything: whatever came after stays reachable by Redo and as a line.
Renaming or deleting one touches no story. Only the player removes them; a line that
holds one cannot be deleted (`branches.delete_line`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.store.models import Adventure, Node, SavePoint
from talekeeper.story import chains, line_ends, tree
from talekeeper.story.tree import TreeError

MAX_NAME = 120
MAX_NOTE = 2000


@dataclass(frozen=True)
class SavePointInfo:
    id: int
    name: str
    note: str
    node_id: int
    turn: int  # turns after the opening
    on_line: bool  # on the line being read: at or before the head, or ahead of it by Redo
    at_head: bool
    action_kind: str
    action_text: str
    narration: str
    created_at: datetime | None


def _name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise TreeError("A Save Point needs a name.")
    if len(name) > MAX_NAME:
        raise TreeError(f"A Save Point's name can be at most {MAX_NAME} characters.")
    return name


def _note(note: str) -> str:
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        raise TreeError(f"A Save Point's note can be at most {MAX_NOTE} characters.")
    return note


def find(session: Session, adventure: Adventure, save_point_id: int) -> SavePoint | None:
    sp = session.get(SavePoint, save_point_id)
    return sp if sp is not None and sp.adventure_id == adventure.id else None


def create(session: Session, adventure: Adventure, name: str, note: str = "") -> SavePoint:
    """Save the moment being read (the head) under `name`."""
    node = tree.head(session, adventure)
    sp = SavePoint(adventure_id=adventure.id, node_id=node.id, name=_name(name), note=_note(note))
    session.add(sp)
    session.flush()
    line_ends.touch(session, adventure.id, node.parent_id)  # a saved take ends a line
    return sp


def list_save_points(session: Session, adventure: Adventure) -> list[SavePointInfo]:
    """Newest first. Whether each is on the line being read is read from the redo chains
    (`chains`): a few rows however long the story, never a walk along the line."""
    rows = session.execute(
        select(
            SavePoint.id,
            SavePoint.name,
            SavePoint.note,
            SavePoint.node_id,
            SavePoint.created_at,
            Node.depth,
            Node.chain,
            Node.action_kind,
            Node.action_text,
            Node.narration,
        )
        .join(Node, Node.id == SavePoint.node_id)
        .where(SavePoint.adventure_id == adventure.id)
        .order_by(SavePoint.created_at.desc(), SavePoint.id.desc())
    ).all()
    if not rows:
        return []
    head = tree.head(session, adventure)
    path = chains.segments(session, head)
    return [
        SavePointInfo(
            id=r.id,
            name=r.name,
            note=r.note,
            node_id=r.node_id,
            turn=r.depth,
            on_line=chains.on_path(path, r.chain, r.depth) or chains.ahead(head, r.chain, r.depth),
            at_head=r.node_id == head.id,
            action_kind=r.action_kind,
            action_text=r.action_text,
            narration=r.narration,
            created_at=r.created_at,
        )
        for r in rows
    ]


def rename(sp: SavePoint, name: str | None = None, note: str | None = None) -> SavePoint:
    """Change the label only; the moment it points at never moves."""
    if name is not None:
        sp.name = _name(name)
    if note is not None:
        sp.note = _note(note)
    return sp


def delete(session: Session, sp: SavePoint) -> None:
    """Forget the name; the story it pointed at is untouched and the head does not move."""
    node = session.get(Node, sp.node_id)
    if node is not None:
        line_ends.touch(session, sp.adventure_id, node.parent_id)
    session.delete(sp)


def restore(session: Session, adventure: Adventure, sp: SavePoint) -> Node:
    """Move the head to the saved moment. Deletes nothing, writes no turn, never forks."""
    node = session.get(Node, sp.node_id)
    if node is None or node.adventure_id != adventure.id:
        raise TreeError("That Save Point's moment is no longer part of this story.")
    tree.move_head(adventure, node)
    return node
