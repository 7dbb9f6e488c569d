"""The adventure's active memories and their BM25 index, kept between turns.

Reading every memory and rebuilding the index each turn made retrieval cost grow with the
story (212 ms over 10,000 memories). Here each adventure's index lives in the process and
is brought up to date from the rows changed since it was last read (`updated_at`, with a
margin for transactions that committed late); a row count that does not add up (a row
deleted, one missed) rebuilds it from scratch. The database stays the only truth: a fresh
process simply reads everything once.
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


@dataclass
class Row:
    id: int
    node_id: int
    depth: int
    first_depth: int
    text: str
    pinned: bool


@dataclass
class Kept:
    index: lexical.Index = field(default_factory=lexical.Index)
    active: dict[int, Row] = field(default_factory=dict)
    stamps: dict[int, datetime] = field(default_factory=dict)  # every row read, any status
    newest: datetime | None = None

    def on_path(self, path: Sequence[int]) -> list[Row]:
        """Active memories whose node is on `path` (index i: the node at depth i)."""
        depth = len(path)
        return [r for r in self.active.values() if r.depth < depth and path[r.depth] == r.node_id]


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
        rows = kept.on_path(path)
        scores = kept.index.scores(query, {r.id for r in rows})
    found = [(r, scores.get(r.id, 0.0)) for r in rows if r.pinned or r.id in scores]
    found.sort(key=lambda p: (-p[1], -p[0].depth))
    return found, len(rows)


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
        if r.status == "active":
            old = kept.active.get(r.id)
            kept.active[r.id] = Row(r.id, r.node_id, r.depth, r.first_depth, r.text, bool(r.pinned))
            if old is None or old.text != r.text:
                kept.index.put(r.id, r.text)
        elif r.id in kept.active:
            del kept.active[r.id]
            kept.index.remove(r.id)
