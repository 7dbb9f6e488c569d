"""The whole root→node path, kept between turns so reading it costs O(1), not O(story).

The memory bank needs the full path each turn (which memories and summaries lie on it);
walking 10,000 parents with a recursive query every turn made a turn's cost grow with the
story. Nodes are immutable, so a node's path never changes: a child's path is its
parent's plus itself. Entries are keyed by the node's id *and* its creation time, because
SQLite may reuse the id of a deleted node for a new one elsewhere in the tree.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

CACHED_PATHS = 64  # a few adventures' heads and their recent parents

_ROW = text(
    """
    SELECT n.parent_id, n.depth, n.created_at, p.created_at
    FROM nodes AS n LEFT JOIN nodes AS p ON p.id = n.parent_id
    WHERE n.id = :id
    """
)
_WALK = text(
    """
    WITH RECURSIVE path(id, parent_id) AS (
        SELECT id, parent_id FROM nodes WHERE id = :start
        UNION ALL
        SELECT nodes.id, nodes.parent_id FROM nodes JOIN path ON nodes.id = path.parent_id
    )
    SELECT id FROM path
    """
)

Key = tuple[str, int, str]
_cache: OrderedDict[Key, tuple[int, ...]] = OrderedDict()
_lock = threading.Lock()


def _key(session: Session, node_id: int, created: datetime | str | None) -> Key:
    return (str(session.get_bind().url), node_id, str(created))


def _get(key: Key) -> tuple[int, ...] | None:
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
        return found


def _put(key: Key, path: tuple[int, ...]) -> None:
    with _lock:
        _cache[key] = path
        _cache.move_to_end(key)
        while len(_cache) > CACHED_PATHS:
            _cache.popitem(last=False)


def full_path(session: Session, node_id: int) -> tuple[int, ...]:
    """Node ids from the root to `node_id`: index i is the node at depth i."""
    return keyed_path(session, node_id)[0]


def keyed_path(session: Session, node_id: int) -> tuple[tuple[int, ...], Key | None, Key | None]:
    """`full_path`, with the keys naming the node and its parent for as long as they
    exist (None: no such node / no parent): other caches of what lies on a path use them."""
    row = session.execute(_ROW, {"id": node_id}).first()
    if row is None:
        return (), None, None
    parent_id, depth, created, parent_created = row
    key = _key(session, node_id, created)
    parent_key = _key(session, parent_id, parent_created) if parent_id is not None else None
    found = _get(key)
    if found is not None:
        return found, key, parent_key
    above = _get(parent_key) if parent_key is not None else ()
    if above is not None and len(above) == depth:
        path = (*above, node_id)
    else:
        ids = [r[0] for r in session.execute(_WALK, {"start": node_id})]
        ids.reverse()
        path = tuple(ids)
    _put(key, path)
    return path, key, parent_key
