"""The story map: every line of the story arranged as a tree of lines.

`tree_ops.list_lines` gives the lines, where each left its parent line (the turn it
forked after) and which line that was. This module orders the lines parent-first
(depth-first), each with its nesting level — what the Lines panel lists — and lays the
same lines out as a drawing (`drawing`): one row per line from where it parted to its end,
a joint where it left its parent, Save Point markers, and where the player is.
"""

from __future__ import annotations

from talekeeper.service import tree_ops
from talekeeper.service.app import Talekeeper
from talekeeper.views.story import (
    Line,
    MapDrawing,
    MapLine,
    MapRow,
    MapSave,
    SavePoint,
    StoryMap,
)


def line_tree(tk: Talekeeper, adventure_id: int) -> StoryMap:
    """`list_lines`, with the lines in tree order, each with its `level`, `parent_line`
    (the line it left, None for the first) and its name, and `longest` (for drawing
    lengths)."""
    data = tree_ops.list_lines(tk, adventure_id)
    lines = data.lines
    ids = {line.id for line in lines}
    children: dict[int | None, list[Line]] = {}
    for line in lines:
        parent = line.parent_line if line.parent_line in ids else None
        children.setdefault(parent, []).append(line)
    names = {line.id: line.name for line in lines}

    def placed(line: Line, level: int, parent: int | None) -> MapLine:
        parent_name = names.get(parent) if parent else None
        return MapLine(
            **{**dict(line), "parent_line": parent}, level=level, parent_name=parent_name
        )

    ordered: list[MapLine] = []

    def walk(parent: int | None, level: int) -> None:
        for line in sorted(children.get(parent, []), key=lambda x: (x.fork_depth or 0, x.id)):
            ordered.append(placed(line, level, parent))
            walk(line.id, level + 1)

    walk(None, 0)
    seen = {line.id for line in ordered}
    ordered += [placed(line, 0, None) for line in lines if line.id not in seen]  # never lose one
    longest = max((line.length for line in lines), default=0)
    saves = tree_ops.list_save_points(tk, adventure_id).save_points
    picture = drawing(ordered, longest, data.head_depth, saves)
    return StoryMap(**{**dict(data), "lines": ordered}, longest=longest, drawing=picture)


ROW = 26  # drawing units per line
LEFT, WIDTH = 12, 320


def drawing(
    lines: list[MapLine], longest: int, head_depth: int | None, save_points: list[SavePoint]
) -> MapDrawing:
    """Coordinates for the story map's picture (the template only draws them): x is the
    turn, y the line's row in tree order. Pure, so a test can read the geometry."""
    scale = (WIDTH - 2 * LEFT) / max(longest, 1)
    row = {line.id: i for i, line in enumerate(lines)}
    turn_of: dict[str, int] = {}
    for sp in save_points:
        turn_of.setdefault(sp.name, sp.turn)
    rows = []
    for i, line in enumerate(lines):
        y = ROW * i + ROW // 2
        start = line.fork_depth or 0
        parent_row = row.get(line.parent_line) if line.parent_line is not None else None
        here = None
        if line.ends_at_head:
            here = line.length
        elif line.has_head and head_depth is not None and head_depth >= start:
            here = head_depth
        rows.append(
            MapRow(
                id=line.id,
                label=line.name or "Unnamed line",  # as the list below names it
                y=y,
                x1=round(LEFT + start * scale, 1),
                x2=round(LEFT + max(line.length, start) * scale, 1),
                joint_y=ROW * parent_row + ROW // 2 if parent_row is not None else None,
                current=line.has_head,
                here_x=round(LEFT + here * scale, 1) if here is not None else None,
                saves=[
                    MapSave(name=name, x=round(LEFT + turn_of[name] * scale, 1))
                    for name in line.save_points
                    if name in turn_of
                ],
            )
        )
    return MapDrawing(rows=rows, width=WIDTH, height=ROW * max(len(lines), 1))
