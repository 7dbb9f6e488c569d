"""A prompt's history — the last turns on the path to the head — kept between turns.

Reading the last 200 turns' text every turn made each turn read (and parse) the window
again. Nodes are immutable, so a turn's history is its parent's plus the turn itself:
when the parent's is kept, the turn reads no history row at all (the head it is written
below is already loaded). Entries are keyed like `story.paths` (the node's id *and* its
creation time), so a node deleted and its id reused by another is never mistaken for it,
and another process's writes cannot make an entry wrong: what a key names never changes.
The opening alone is never kept: until a turn follows it, it may be rewritten in place
(`tree.rewrite_opening`). The database stays the only truth; a fresh process reads once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.context.prompt import HistoryTurn
from talekeeper.store.models import Node
from talekeeper.story.paths import Key

WINDOW = 200  # turns read from the store; the budget decides how many are sent
CACHED = 32  # a few adventures' heads and their parents

_cache: OrderedDict[Key, tuple[HistoryTurn, ...]] = OrderedDict()
_lock = threading.Lock()


def _get(key: Key | None) -> tuple[HistoryTurn, ...] | None:
    if key is None:
        return None
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
        return found


def _put(key: Key, turns: tuple[HistoryTurn, ...]) -> None:
    with _lock:
        _cache[key] = turns
        _cache.move_to_end(key)
        while len(_cache) > CACHED:
            _cache.popitem(last=False)


def read(session: Session, ids: Sequence[int]) -> tuple[HistoryTurn, ...]:
    """The turns `ids` (story order), reading only the columns a prompt needs."""
    rows = session.execute(
        select(Node.id, Node.depth, Node.action_kind, Node.action_text, Node.narration).where(
            Node.id.in_(list(ids))
        )
    )
    by_id = {r.id: r for r in rows}
    return tuple(
        HistoryTurn(
            by_id[i].action_kind, by_id[i].action_text, by_id[i].narration, i, by_id[i].depth
        )
        for i in ids
    )


def history_at(
    session: Session,
    head: Node,
    path: Sequence[int],
    key: Key | None,
    parent_key: Key | None,
    limit: int = WINDOW,
) -> list[HistoryTurn]:
    """The last `limit` (≤ WINDOW) turns on `path` (root → `head`; `key`, `parent_key`:
    from `story.paths.keyed_path`)."""
    ids = list(path[-WINDOW:])
    turns = _get(key)
    if turns is None or _ids(turns) != ids:
        above, want = _get(parent_key), ids[:-1]
        if above is not None and ids and ids[-1] == head.id and len(above) >= len(want):
            above = above[len(above) - len(want) :]
        if above is not None and _ids(above) == want and ids and ids[-1] == head.id:
            own = HistoryTurn(
                head.action_kind, head.action_text, head.narration, head.id, head.depth
            )
            turns = (*above, own)
        else:
            turns = read(session, ids)
        if key is not None and head.parent_id is not None:
            _put(key, turns)
    return list(turns[-limit:])


def _ids(turns: Sequence[HistoryTurn]) -> list[int | None]:
    return [t.node_id for t in turns]
