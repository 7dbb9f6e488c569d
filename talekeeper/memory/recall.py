"""The adventure's active memories and their BM25 index, kept between turns.

Reading every memory and rebuilding the index each turn made retrieval cost grow with the
story (212 ms over 10,000 memories). Here each adventure's index lives in the process and
is brought up to date from the rows changed since it was last read (`updated_at`, with a
margin for transactions that committed late); a row count that does not add up (a row
deleted, one missed) rebuilds it from scratch. The database stays the only truth: a fresh
process simply reads everything once.

A query may return only the memories on the path to the head, and BM25 weighs its words by
those (`lexical`): the memories on each of the last few paths, with their length in words,
are kept too (`Pool`), changed with the rows, and a child's made from its parent's, so a
turn no longer looks at every active memory to find the ones on its path (nor sums their
lengths): only a head elsewhere does, once. Scoring then reads the postings of the query's
words and nothing else.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, select, true
from sqlalchemy.orm import Session

from talekeeper.memory import lexical
from talekeeper.store.models import Memory

MARGIN = timedelta(seconds=30)
CACHED_ADVENTURES = 16
POOLS_KEPT = 8  # paths whose pools are kept per adventure: the last heads


@dataclass
class Row:
    id: int
    node_id: int
    depth: int
    first_depth: int
    text: str
    pinned: bool


@dataclass
class Pool:
    """The active memories on one path and their length in words, kept as rows change
    (BM25 weighs a word by the memories a query may return, `lexical`)."""

    path: Sequence[int]
    ids: set[int] = field(default_factory=set)
    total: int = 0

    def holds(self, row: Row) -> bool:
        return row.depth < len(self.path) and self.path[row.depth] == row.node_id


@dataclass
class Kept:
    index: lexical.Index = field(default_factory=lexical.Index)
    active: dict[int, Row] = field(default_factory=dict)
    stamps: dict[int, datetime] = field(default_factory=dict)  # every row read, any status
    newest: datetime | None = None
    pinned: set[int] = field(default_factory=set)  # active and pinned
    at_node: dict[int, set[int]] = field(default_factory=dict)  # active ids by node
    pools: OrderedDict[int, Pool] = field(default_factory=OrderedDict)  # by the path's end

    def pool(self, path: Sequence[int]) -> Pool:
        """The active memories on `path`: kept for the last few heads, a child's
        made from its parent's (a turn), only a jump elsewhere (undo, another line, a Save
        Point, a fresh process) counts every active memory, once."""
        path = path if isinstance(path, tuple) else tuple(path)
        found = self.pools.get(path[-1])
        if found is None or (found.path is not path and found.path != path):
            parent = self.pools.get(path[-2]) if len(path) > 1 else None
            if parent is not None and parent.path == path[:-1]:
                here = self.at_node.get(path[-1], set())
                found = Pool(path, parent.ids | here)
                found.total = parent.total + sum(self.index.lengths[i] for i in here)
            else:
                found = Pool(path)
                for row in self.active.values():
                    if found.holds(row):
                        found.ids.add(row.id)
                        found.total += self.index.lengths[row.id]
            self.pools[path[-1]] = found
            while len(self.pools) > POOLS_KEPT:
                self.pools.popitem(last=False)
        self.pools.move_to_end(path[-1])
        return found

    def add(self, row: Row) -> None:
        self.active[row.id] = row
        self.index.put(row.id, row.text)
        self.at_node.setdefault(row.node_id, set()).add(row.id)
        if row.pinned:
            self.pinned.add(row.id)
        self._count(row, 1)

    def drop(self, memory_id: int) -> None:
        row = self.active.pop(memory_id, None)
        if row is None:
            return
        self._count(row, -1)
        self.index.remove(memory_id)
        self.at_node[row.node_id].discard(memory_id)
        self.pinned.discard(memory_id)

    def _count(self, row: Row, sign: int) -> None:
        for pool in self.pools.values():
            if pool.holds(row):
                if sign > 0:
                    pool.ids.add(row.id)
                else:
                    pool.ids.discard(row.id)
                pool.total += sign * self.index.lengths[row.id]


_cache: OrderedDict[tuple[str, int], Kept] = OrderedDict()
_lock = threading.Lock()
_COLUMNS = (
    Memory.id,
    Memory.node_id,
    Memory.depth,
    Memory.first_depth,
    Memory.text,
    Memory.pinned,
    Memory.status,
    Memory.updated_at,
)


def ranked_on_path(
    session: Session, adventure_id: int, path: Sequence[int], query: str
) -> tuple[list[tuple[Row, float]], int]:
    """(memory, BM25 score) for the pinned memories on `path` and those sharing a word with
    `query`, best first; and how many memories on the path were considered."""
    with _reading:
        kept = memories(session, adventure_id)
        if not path:
            return [], 0
        pool = kept.pool(path)
        rows = kept.active
        scores = kept.index.scores_in(query, pool.ids, pool.total)
        pinned = kept.pinned & pool.ids
    found = [(rows[i], scores.get(i, 0.0)) for i in {*scores, *pinned}]
    found.sort(key=lambda p: (-p[1], -p[0].depth, p[0].id))
    return found, len(pool.ids)


# Built once (every turn runs one): the adventure's memory count and newest change, with
# the rows changed since a time alongside; and all its rows, for a first read.
_ALL = select(*_COLUMNS).where(Memory.adventure_id == bindparam("adventure"))
_TOTALS = (
    select(func.count().label("count"), func.max(Memory.updated_at).label("newest"))
    .where(Memory.adventure_id == bindparam("adventure"))
    .subquery()
)
_SINCE = _ALL.where(Memory.updated_at >= bindparam("since")).subquery()
_CHANGED = select(_TOTALS.c["count"], _TOTALS.c.newest, _SINCE).select_from(
    _TOTALS.outerjoin(_SINCE, true())
)

_reading = threading.Lock()  # one reader updates and reads an index at a time (web threads)


def memories(session: Session, adventure_id: int) -> Kept:
    """The adventure's active memories and their index, current as of this session
    (call with `_reading` held: the index is updated in place). One statement a turn: the
    adventure's memory count and newest change, with the rows changed since the last read
    (less the margin) alongside."""
    key = (str(session.get_bind().url), adventure_id)
    with _lock:
        kept = _cache.get(key)
        if kept is not None:
            _cache.move_to_end(key)
    if kept is not None and kept.newest is not None:
        rows = session.execute(
            _CHANGED, {"adventure": adventure_id, "since": kept.newest - MARGIN}
        ).all()
        count, newest = rows[0][0], rows[0][1]
        _apply(kept, [r for r in rows if r.id is not None])
        kept.newest = newest
        if len(kept.stamps) == count:
            return kept
    kept = Kept()
    rows = session.execute(_ALL, {"adventure": adventure_id}).all()
    _apply(kept, rows)
    kept.newest = max((r.updated_at for r in rows if r.updated_at is not None), default=None)
    with _lock:
        _cache[key] = kept
        while len(_cache) > CACHED_ADVENTURES:
            _cache.popitem(last=False)
    return kept


def _apply(kept: Kept, rows) -> None:  # type: ignore[no-untyped-def]
    for r in rows:
        if r.id in kept.stamps and kept.stamps[r.id] == r.updated_at:
            continue  # read before and not written since (the margin reads rows again)
        kept.stamps[r.id] = r.updated_at
        row = Row(r.id, r.node_id, r.depth, r.first_depth, r.text, bool(r.pinned))
        old = kept.active.get(r.id)
        if r.status == "active" and old is not None and old.text == r.text:
            kept.active[r.id] = row  # used, pinned or unpinned: its words and place stay
            if row.pinned:
                kept.pinned.add(r.id)
            else:
                kept.pinned.discard(r.id)
            continue
        kept.drop(r.id)
        if r.status == "active":
            kept.add(row)
