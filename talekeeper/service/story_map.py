"""The story map: every line of the story arranged as a tree of lines.

`tree_ops.list_branches` gives the lines and where each left its parent line (the turn it
forked after). Which line that parent is follows from the tree: from the fork turn, the
oldest continuation leads down to the parent line's end. This module reads one narrow row
(id, parent) per turn to work that out and orders the lines parent-first (depth-first),
each with its nesting level — what the Lines panel draws.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from talekeeper.service import tree_ops
from talekeeper.service.adventures import get_adventure
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Node


def _first_children(tk: Talekeeper, adventure_id: int) -> dict[int, int]:
    """Each turn's oldest continuation (by id)."""
    with tk.db.session() as session:
        get_adventure(session, adventure_id)
        nodes = Node.__table__.c
        rows = session.connection().execute(
            select(nodes.id, nodes.parent_id).where(nodes.adventure_id == adventure_id).order_by(nodes.id)
        )
        first: dict[int, int] = {}
        for node_id, parent_id in rows:
            if parent_id is not None and parent_id not in first:
                first[parent_id] = node_id
        return first


def line_tree(tk: Talekeeper, adventure_id: int) -> dict[str, Any]:
    """`list_branches`, with the lines in tree order, each with `level`, `parent_line`
    (the line it left, None for the first) and `longest` (for drawing lengths)."""
    data = tree_ops.list_branches(tk, adventure_id)
    lines = data["branches"]
    first = _first_children(tk, adventure_id)

    def end_of(node_id: int) -> int:
        while node_id in first:
            node_id = first[node_id]
        return node_id

    ids = {line["id"] for line in lines}
    children: dict[int | None, list[dict[str, Any]]] = {}
    for line in lines:
        parent = end_of(line["fork_id"]) if line["fork_id"] is not None else None
        if parent not in ids or parent == line["id"]:
            parent = None
        children.setdefault(parent, []).append({**line, "parent_line": parent})

    ordered: list[dict[str, Any]] = []

    def walk(parent: int | None, level: int) -> None:
        for line in sorted(children.get(parent, []), key=lambda x: (x["fork_depth"] or 0, x["id"])):
            ordered.append({**line, "level": level})
            walk(line["id"], level + 1)

    walk(None, 0)
    seen = {line["id"] for line in ordered}
    ordered += [{**line, "level": 0, "parent_line": None} for line in lines if line["id"] not in seen]  # never lose one
    names = {line["id"]: line["name"] for line in lines}
    for line in ordered:
        line["parent_name"] = names.get(line["parent_line"]) if line["parent_line"] else None
    return {**data, "branches": ordered, "longest": max((line["length"] for line in lines), default=0)}
