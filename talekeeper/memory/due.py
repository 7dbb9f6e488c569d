"""Which blocks of turns on a path are due a memory: found from marks, at O(window) a run.

Turns are grouped in blocks of `memory_every`; a block is due once the story is a whole
block past it (and `memory_start` long) and its last node has no memory (of any status; the
player's own memories summarise no block). Asking about every block end on the path made
each run after a turn read O(story) ids (1,665 at 10,000 turns, ~30 ms), and a cache in the
process only spared that on the turn after a turn: after a restart, an undo, another line, a
Save Point or a take step the run asked about all of them again.

So each run leaves a **mark** in the database (`store.models.MemoryMark`) at the newest block
end it looked at: the ends up to it that may lack a memory (its gaps, kept as ranges: a
stretch played with the bank off is one range however long). A memory's row lives as long
as its node and every node below it, so a mark stays true, whichever process writes
memories since, for as long as its node exists; deleting the node deletes the mark. A gap
filled since is merely asked about once more. The next run, in any process, on any head
below that end, reads the nearest mark on its path (one statement over the newest
`NEAREST` ends), then asks about the mark's gaps, oldest first, and the ends past it, and
stops once it has found as many due blocks as it will write (the oldest first), leaving the
rest as gaps for the next run. A normal turn asks about at most the one new end.

Played turn by turn, every block end gets its mark as it becomes the newest. A path with no
mark among its newest ends (a story from before marks, imported, or played with the bank
off) is read in ever wider windows and its ends asked about in growing batches, once; that
run also marks one end in every `NEAREST` it asked about (a milestone), so an undo or a
Save Point anywhere on that path finds a mark in its first window.

Why marks in a table and not a "checked up to" column on the adventure: the adventure has
one head, but a run may come at any node of the tree (the head moved by undo, a line chosen,
a Save Point restored); a mark belongs to a node, so every line keeps what was found on it.
Why not bound the question by the memories' `depth`: a depth says nothing about which ends
below it were settled, and gaps left by a failed block or a bank turned off are exactly the
ones that must still be found.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

from sqlalchemy import Insert, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from talekeeper.context.settings import ContextSettings
from talekeeper.memory.bank import HAND, MEMORY_WRITES, Block
from talekeeper.store.db import serialize
from talekeeper.store.models import Memory, MemoryMark

NEAREST = 8  # the newest block ends whose marks are read first (48 turns at 6 a block)

Ranges = list[tuple[int, int]]  # block ends lo..hi, inclusive, ascending, disjoint


# Built once: a run sends each of them at most a few times.
_m = Memory.__table__.c
_HAVE = select(_m.node_id).where(
    _m.adventure_id == bindparam("adventure"),
    _m.node_id.in_(bindparam("nodes", expanding=True)),
    _m.source != HAND,  # the player's own: no summary of a block
)
_k = MemoryMark.__table__.c
_MARKS = select(_k.node_id, _k.gaps).where(
    _k.node_id.in_(bindparam("nodes", expanding=True)),
    _k.every == bindparam("every"),
    _k.start == bindparam("start"),
)


def _put_mark(dialect: str) -> Insert:
    """A mark put whether or not its node has one: two runs may look at the same ends at
    once (two processes on one database, or a run of the worker's beside another), and
    either's mark is true, so the second simply replaces the first instead of failing."""
    put = (postgresql if dialect == "postgresql" else sqlite).insert(MemoryMark.__table__)
    return put.on_conflict_do_update(
        index_elements=[_k.node_id],
        set_={"every": put.excluded.every, "start": put.excluded.start, "gaps": put.excluded.gaps},
    )


_PUT_MARK = {name: _put_mark(name) for name in ("sqlite", "postgresql")}  # built once


def block_ends(head_depth: int, settings: ContextSettings) -> range:
    """The ends of the blocks due a memory with the head at `head_depth`: a whole block past
    the end, and the block's end at least `memory_start - memory_every` deep."""
    every = settings.memory_every
    first = every * max(1, -(-(settings.memory_start - every) // every))
    return range(first, head_depth - every + 1, every)


def due_blocks(
    session: Session,
    adventure_id: int,
    path: Sequence[int],
    settings: ContextSettings,
    limit: int | None = None,
) -> list[Block]:
    """The blocks on `path` (root → head) that should have a memory and have none, oldest
    first: all of them, or the oldest `limit`. Leaves a mark at the newest end, and at the
    milestones past the mark it started from, for the next run (the caller's transaction
    writes them)."""
    ends = block_ends(len(path) - 1, settings)
    if not ends:
        return []
    every = settings.memory_every
    mark, gaps = _nearest_mark(session, path, ends, settings)
    todo = [*gaps, *([(mark + every, ends[-1])] if mark < ends[-1] else [])]
    asked: list[int] = []
    missing: list[int] = []
    batch = NEAREST
    while todo and (limit is None or len(missing) < limit):
        chunk = _take(todo, batch, every)
        have = set(
            session.scalars(_HAVE, {"adventure": adventure_id, "nodes": [path[e] for e in chunk]})
        )
        asked += chunk
        missing += [end for end in chunk if path[end] not in have]
        batch *= 4
    marks = {
        end: _ranges(((e, e) for e in missing[: bisect_right(missing, end)]), every)
        for end in asked
        if end > mark and end // every % NEAREST == 0  # a milestone: one in every NEAREST ends
    }
    marks[ends[-1]] = _ranges([*((e, e) for e in missing), *todo], every)  # unasked: gaps
    if mark != ends[-1] or marks[ends[-1]] != gaps:
        _write_marks(session, adventure_id, settings, {path[e]: g for e, g in marks.items()})
    return [Block(end - every + 1, end, path[end]) for end in missing[:limit]]


def _nearest_mark(
    session: Session, path: Sequence[int], ends: range, settings: ContextSettings
) -> tuple[int, Ranges]:
    """The deepest block end on `path` with a mark, and its gaps; (one block before the
    first end, no gaps) when there is none. Reads the newest ends' marks, then ever wider
    windows below them only when those have none."""
    every, top, batch = settings.memory_every, len(ends), NEAREST
    window = {"every": every, "start": settings.memory_start}
    while top > 0:
        below = max(0, top - batch)
        nodes = {path[ends[i]]: ends[i] for i in range(below, top)}
        rows = session.execute(_MARKS, {**window, "nodes": list(nodes)}).all()
        if rows:
            node_id, gaps = max(rows, key=lambda r: nodes[r.node_id])
            return nodes[node_id], _parse(gaps)
        top, batch = below, batch * 4
    return ends[0] - every, []


def _take(todo: Ranges, count: int, every: int) -> list[int]:
    """The first `count` ends of `todo`, removed from it."""
    taken: list[int] = []
    while todo and len(taken) < count:
        lo, hi = todo[0]
        upto = min(hi, lo + (count - len(taken) - 1) * every)
        taken += range(lo, upto + 1, every)
        if upto == hi:
            todo.pop(0)
        else:
            todo[0] = (upto + every, hi)
    return taken


def _ranges(parts: Iterable[tuple[int, int]], every: int) -> Ranges:
    """Ascending disjoint ranges of ends with the adjoining ones joined: one way to write a
    set of ends, so an unchanged mark is seen unchanged."""
    out: Ranges = []
    for lo, hi in parts:
        if out and out[-1][1] + every == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _parse(gaps: str) -> Ranges:
    return [
        (int(lo), int(hi))
        for lo, _, hi in (part.partition("-") for part in gaps.split(",") if part)
    ]


def _write_marks(
    session: Session, adventure_id: int, settings: ContextSettings, marks: dict[int, Ranges]
) -> None:
    """Put the marks (gaps by node id), under the bank's lock (PostgreSQL: the memories'
    writers are serialised per adventure)."""
    serialize(session, MEMORY_WRITES, adventure_id)
    rows = [
        {
            "node_id": node_id,
            "every": settings.memory_every,
            "start": settings.memory_start,
            "gaps": ",".join(f"{lo}-{hi}" for lo, hi in gaps),
        }
        for node_id, gaps in marks.items()
    ]
    session.execute(_PUT_MARK[session.get_bind().dialect.name], rows)
