"""The story map: every line of the story arranged as a tree of lines.

`tree_ops.list_branches` gives the lines, where each left its parent line (the turn it
forked after) and which line that was. This module orders the lines parent-first
(depth-first), each with its nesting level — what the Lines panel draws.
"""

from __future__ import annotations

from typing import Any

from talekeeper.service import tree_ops
from talekeeper.service.app import Talekeeper


def line_tree(tk: Talekeeper, adventure_id: int) -> dict[str, Any]:
    """`list_branches`, with the lines in tree order, each with `level`, `parent_line`
    (the line it left, None for the first) and `longest` (for drawing lengths)."""
    data = tree_ops.list_branches(tk, adventure_id)
    lines = data["branches"]
    ids = {line["id"] for line in lines}
    children: dict[int | None, list[dict[str, Any]]] = {}
    for line in lines:
        parent = line["parent_line"]
        if parent not in ids:
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
