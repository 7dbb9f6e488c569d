"""Redo chains: the story tree cut into the runs Redo walks, so "is this turn on the line
being read?" is a comparison of two labels, never a walk along the story.

Each node's `active_child_id` is the child Redo follows. Following it from any node gives
a *chain*: a run of turns, each its parent's active child, down to a turn with no
children. Every node is on exactly one chain (a node that is not its parent's active
child starts one), and every node carries its chain's label (`Node.chain`, migration 0010;
labels are small integers, unique within an adventure, with no meaning of their own).
A chain holds one node per depth, so a chain and a depth name at most one node.

What that buys, at any length of story:

- **Ahead by Redo**: a turn is reached from the head by Redo exactly when it is on the
  head's chain and deeper than the head.
- **On the path to the head**: the path root → node is a few chains' stretches
  (`segments`): the node's chain from its top, then the chain of the turn above that top,
  and so on. A turn lies on the path when one stretch has its label and spans its depth.
  Play, retry, undo and redo keep the head's path one stretch long; a path has one more
  stretch for each place where it leaves what Redo would follow (another line read,
  another take chosen further up), never more because the story is longer.

Keeping labels true is `link`'s job: every change of an active child goes through it (a
new turn, Undo, choosing a take, deleting a line). When a parent's active child changes,
its chain splits below the parent and the new child's chain joins it there; of the two
ways to label that (the part below gets a new label and the joining chain takes the
parent's, or the part above takes the joining chain's) the one that rewrites fewer rows
is chosen, so playing on, a retry and a take step at the end rewrite one row at most.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, inspect, select, text, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from talekeeper.store.models import Node

_nodes = Node.__table__.c
_CHUNK = 200  # chains a query (SQLite reads at most 500 SELECTs joined)


@dataclass(frozen=True)
class Stretch:
    """The part of chain `chain` from depth `first` to depth `last` (both on a path)."""

    chain: int
    first: int
    last: int


Path = tuple[Stretch, ...]


# The statements a take step, an undo or a new turn runs, built once on the table (not the
# mapped class): building and compiling an ORM statement costs several times the query.
_FRESH = select(func.max(_nodes.chain)).where(_nodes.adventure_id == bindparam("adventure"))
_RELABEL = (
    update(Node.__table__)
    .where(
        _nodes.adventure_id == bindparam("adventure"),
        _nodes.chain == bindparam("old"),
        _nodes.depth > bindparam("low"),
        _nodes.depth <= bindparam("high"),
    )
    .values(chain=bindparam("new"))
)
_DEEPEST = 2**31 - 1  # (no depth reaches it; an integer column holds it)


def fresh(session: Session, adventure_id: int) -> int:
    """A label no chain of the adventure has."""
    top = session.execute(_FRESH, {"adventure": adventure_id}).scalar()
    return (top or 0) + 1


_TOP = (
    select(_nodes.depth, _nodes.parent_id)
    .where(_nodes.adventure_id == bindparam("adventure"), _nodes.chain == bindparam("chain"))
    .order_by(_nodes.depth)
    .limit(1)
)
_BOTTOM = (
    select(_nodes.depth)
    .where(_nodes.adventure_id == bindparam("adventure"), _nodes.chain == bindparam("chain"))
    .order_by(_nodes.depth.desc())
    .limit(1)
)
_PARENT = select(_nodes.chain, _nodes.depth).where(_nodes.id == bindparam("id"))


def _top(session: Session, adventure_id: int, chain: int) -> Any:
    return session.execute(_TOP, {"adventure": adventure_id, "chain": chain}).one()


def _bottom(session: Session, adventure_id: int, chain: int) -> int:
    return session.execute(_BOTTOM, {"adventure": adventure_id, "chain": chain}).scalar_one()


def _relabel(
    session: Session,
    adventure_id: int,
    old: int,
    new: int,
    *,
    deeper_than: int | None = None,
    up_to: int | None = None,
) -> None:
    """Label `new` the nodes of chain `old` deeper than `deeper_than` and down to `up_to`
    (without: all of them), in the database and on the nodes this session holds."""
    low = -1 if deeper_than is None else deeper_than
    high = _DEEPEST if up_to is None else up_to
    session.flush()  # (a label set on a node and not yet written is written first)
    session.execute(
        _RELABEL, {"adventure": adventure_id, "old": old, "new": new, "low": low, "high": high}
    )
    for held in list(session.identity_map.values()):
        seen = inspect(held).dict  # only what is loaded: anything else is read afresh
        if (
            isinstance(held, Node)
            and seen.get("adventure_id") == adventure_id
            and seen.get("chain") == old
            and "depth" in seen
            and low < seen["depth"] <= high
        ):
            set_committed_value(held, "chain", new)


def start(session: Session, root: Node) -> None:
    """The opening begins the adventure's first chain."""
    root.chain = fresh(session, root.adventure_id)


def link(session: Session, parent: Node, child: Node) -> None:
    """Make `child` the one Redo follows from `parent` (`parent.active_child_id`), and keep
    every label true. `child` is a child of `parent`, written already or new (unflushed
    children have no label yet)."""
    old = parent.active_child_id
    parent.active_child_id = child.id
    if old == child.id:
        return
    aid, label = parent.adventure_id, parent.chain
    if old is None:  # the end of its chain: the child (its first) goes on with it
        child.chain = label
        return
    above = parent.depth - _top(session, aid, label).depth + 1
    below = _bottom(session, aid, label) - parent.depth  # the old continuation's part
    joining = 1 if child.chain is None else _bottom(session, aid, child.chain) - child.depth + 1
    if below + joining <= above:
        _relabel(session, aid, label, fresh(session, aid), deeper_than=parent.depth)
        if child.chain is None:
            child.chain = label
        else:
            _relabel(session, aid, child.chain, label)
    else:
        if child.chain is None:
            child.chain = fresh(session, aid)
        _relabel(session, aid, label, child.chain, up_to=parent.depth)


def segments(session: Session, node: Node) -> Path:
    """The path root → `node` as stretches of chains, root first: one query a stretch."""
    out: list[Stretch] = []
    chain, last = node.chain, node.depth
    while True:
        depth, parent_id = _top(session, node.adventure_id, chain)
        out.append(Stretch(chain, depth, last))
        if parent_id is None:
            break
        chain, last = session.execute(_PARENT, {"id": parent_id}).one()
    out.reverse()
    return tuple(out)


def paths(session: Session, adventure_id: int, ends: dict[int, Any]) -> dict[int, Path]:
    """What `segments` gives for each of `ends` (id → a row with its `chain` and `depth`),
    read a round at a time: one query for all the chains first met in a round (each top's
    depth and the chain of the turn above it), however many ends share them."""
    tops: dict[int, tuple[int, int | None]] = {}  # chain → (its top's depth, the chain above)
    wanted = {r.chain for r in ends.values()}
    while wanted:
        found: set[int | None] = set()
        ordered = sorted(wanted)
        for i in range(0, len(ordered), _CHUNK):
            for chain, depth, above in session.execute(
                _tops(adventure_id, ordered[i : i + _CHUNK])
            ):
                tops[chain] = (depth, above)
                found.add(above)
        wanted = {c for c in found if c is not None and c not in tops}
    out: dict[int, Path] = {}
    for end, row in ends.items():
        stretches: list[Stretch] = []
        chain, last = row.chain, row.depth
        while True:
            first, above = tops[chain]
            stretches.append(Stretch(chain, first, last))
            if above is None:
                break
            chain, last = above, first - 1
        stretches.reverse()
        out[end] = tuple(stretches)
    return out


def _tops(adventure_id: int, labels: list[int]) -> Any:
    """Each chain's top (an indexed seek a chain, as `_TOP`) and the chain above it, in one
    query: written as text of integers, since hundreds of built expressions cost more than
    the query (and a grouped min() reads every row of a chain)."""
    each = " UNION ALL ".join(
        f"SELECT * FROM (SELECT chain, depth, parent_id FROM nodes WHERE adventure_id = "
        f"{adventure_id:d} AND chain = {label:d} ORDER BY depth LIMIT 1) AS t{i}"
        for i, label in enumerate(labels)
    )
    return text(
        f"SELECT t.chain, t.depth, above.chain FROM ({each}) AS t "
        "LEFT JOIN nodes AS above ON above.id = t.parent_id"
    )


def chain_at(path: Path, depth: int) -> Stretch | None:
    """The stretch of `path` that holds its turn at `depth`."""
    return next((s for s in path if s.first <= depth <= s.last), None)


def on_path(path: Path, chain: int | None, depth: int) -> bool:
    """Whether the node labelled `chain` at `depth` lies on `path`."""
    return any(s.chain == chain and s.first <= depth <= s.last for s in path)


def ahead(head: Node, chain: int | None, depth: int) -> bool:
    """Whether the node labelled `chain` at `depth` is reached from `head` by Redo."""
    return chain == head.chain and depth > head.depth


def ids_on(session: Session, adventure_id: int, path: Path, first: int, last: int) -> list[int]:
    """The ids of the path's turns from depth `first` to `last`, in story order: an indexed
    range a stretch, so reading a window costs the window, wherever it lies."""
    out: list[int] = []
    for s in path:
        low, high = max(first, s.first), min(last, s.last)
        if low > high:
            continue
        out += session.scalars(
            select(Node.id)
            .where(
                Node.adventure_id == adventure_id,
                Node.chain == s.chain,
                Node.depth >= low,
                Node.depth <= high,
            )
            .order_by(Node.depth)
        )
    return out
