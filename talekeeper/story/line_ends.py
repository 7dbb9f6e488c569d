"""Which turns end a line, and how many children each turn has, kept on the nodes as the
tree changes (`Node.line_end`, `Node.child_count`, migration 0012), so the lines are listed
from their ends (`branches.list_lines`) without reading the whole tree.

Whether a leaf ends a line (`ends`) depends only on its parent's children: how many there
are, which of them tell the same turn again (`families`), which go on, which one Redo
follows from the parent, which one is being read, and whether one is saved or named. So
whenever one of those changes, the writer marks that parent (`touch`), and before the
transaction commits (or before the lines are read in it: `settle`) the children of every
marked parent are read once and their flags written where they changed. Every change goes
through the story layer: a new turn (`tree.append_child`), a head move (`tree.move_head`),
a change of active child (`tree.set_active`), a Save Point made or deleted, a line named,
a turn or a line deleted. A bundle import or the migration works all of it out at once
(`recount`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any

from sqlalchemy import bindparam, event, exists, select, text, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from talekeeper.store.models import Adventure, Node, SavePoint
from talekeeper.story.families import STEPS, Sibling, families

_PENDING = "line_ends"  # session.info key: {(adventure id, parent id)} to settle


def ends(
    children: Sequence[Any], active: int | None, head: int | None, saved: set[int]
) -> set[int]:
    """The ids among `children` (all of one parent's: rows with `id`, `action_kind`,
    `action_text`, `take_of`, `child_count` and `branch_name`) that end a line.

    A leaf ends a line unless it is a bare take of a turn read through its `‹ 2/3 ›`: of
    one turn's bare takes only the one read (else the one Redo follows, else the newest)
    does, and none does once a take of that turn goes on; an undone step of the player's
    (a correction written over) is none. A take being read, saved or named always does."""
    family = families(Sibling(c.id, c.action_kind, c.action_text, c.take_of) for c in children)
    goes_on = {family[c.id] for c in children if c.child_count}
    members: dict[int, set[int]] = {}
    for c in children:
        members.setdefault(family[c.id], set()).add(c.id)
    # the one take of each family that ends a line when none goes on: worked out once a
    # family, not once a take (a turn retried often has many)
    shown = {
        root: next((r for r in (head, active) if r in same), max(same))
        for root, same in members.items()
    }
    out = set()
    for c in children:
        if c.child_count:
            continue
        if c.id in saved or c.branch_name is not None or len(children) == 1 or c.id == head:
            out.add(c.id)
        elif c.action_kind in STEPS and c.id != active:
            continue  # undone, and something else was written in its place
        elif family[c.id] not in goes_on and c.id == shown[family[c.id]]:
            out.add(c.id)
    return out


def touch(session: Session, adventure_id: int, *parents: int | None) -> None:
    """Mark `parents` (None: no parent, skipped): their children's flags are settled before
    the transaction ends."""
    pending = session.info.setdefault(_PENDING, set())
    pending.update((adventure_id, p) for p in parents if p is not None)


def settle(session: Session) -> None:
    """Write the flags of every marked parent's children where they changed."""
    pending = session.info.pop(_PENDING, None)
    if not pending:
        return
    by_adventure: dict[int, list[int]] = {}
    for adventure_id, parent in pending:
        by_adventure.setdefault(adventure_id, []).append(parent)
    for adventure_id, parents in by_adventure.items():
        adventure = session.get(Adventure, adventure_id)
        if adventure is not None:
            _refresh(session, adventure, parents)


@event.listens_for(Session, "before_commit")
def _before_commit(session: Session) -> None:
    settle(session)


_CHILD = (  # what `ends` reads of each child
    Node.id,
    Node.parent_id,
    Node.action_kind,
    Node.action_text,
    Node.take_of,
    Node.child_count,
    Node.branch_name,
)


# `_refresh`'s statements, built once on the tables: they run at every turn's commit, and
# building and compiling ORM statements there cost several times the queries.
_n = Node.__table__.c
_parent = Node.__table__.alias("parent")
_CHILDREN = (
    select(
        *(_n[c.key] for c in _CHILD),
        _n.line_end,
        _parent.c.active_child_id.label("active"),
        exists().where(SavePoint.__table__.c.node_id == _n.id).label("saved"),
    )
    .select_from(Node.__table__.join(_parent, _parent.c.id == _n.parent_id))
    .where(
        _n.adventure_id == bindparam("adventure"),
        _n.parent_id.in_(bindparam("parents", expanding=True)),
    )
)
_FLIP = (  # both ways in one statement: a retry or a take step ends one line and not another
    update(Node.__table__)
    .where(_n.id.in_(bindparam("ids", expanding=True)))
    .values(line_end=_n.id.in_(bindparam("ends", expanding=True)))
)


def _refresh(session: Session, adventure: Adventure, parents: list[int]) -> None:
    """One query (it runs at every turn's commit): the children of `parents`, each with its
    parent's active child and whether a Save Point names it."""
    rows = session.execute(_CHILDREN, {"adventure": adventure.id, "parents": parents}).all()
    actives = {r.parent_id: r.active for r in rows}
    saved = {r.id for r in rows if r.saved}
    by_parent: dict[int, list[Any]] = {}
    for r in rows:
        by_parent.setdefault(r.parent_id, []).append(r)
    flip: dict[int, bool] = {}  # id → whether it ends a line now, where that changed
    for parent, children in by_parent.items():
        line = ends(children, actives.get(parent), adventure.head_node_id, saved)
        flip.update((c.id, c.id in line) for c in children if bool(c.line_end) != (c.id in line))
    if not flip:
        return
    now_ends = [node_id for node_id, value in flip.items() if value]
    session.execute(_FLIP, {"ids": list(flip), "ends": now_ends})
    for node_id, value in flip.items():  # and on the nodes this session holds
        held = session.identity_map.get(identity_key(Node, node_id))
        if held is not None:
            set_committed_value(held, "line_end", value)


def recount(session: Session, adventure: Adventure) -> None:
    """Work out every node's children and every line end of `adventure` at once (a bundle
    import writes its nodes without them). The children are read a family at a time, in
    order of their parent, so memory holds one family and the line ends, not the tree."""
    session.flush()
    session.execute(_COUNT, {"adventure": adventure.id})
    saved = set(
        session.scalars(select(SavePoint.node_id).where(SavePoint.adventure_id == adventure.id))
    )
    rows = session.execute(
        _FAMILIES, {"adventure": adventure.id}, execution_options={"yield_per": 1000}
    )
    line: list[int] = []
    for parent, family in groupby(rows, key=lambda r: r.parent_id):
        children = list(family)
        if parent is None:
            line.extend(c.id for c in children if not c.child_count)  # a story of its opening
        else:
            line.extend(ends(children, children[0].active, adventure.head_node_id, saved))
    line.sort()
    for i in range(0, len(line), 500):
        chunk = line[i : i + 500]
        session.execute(update(Node).where(Node.id.in_(chunk)).values(line_end=True))


_FAMILIES = (  # `recount`'s: every node with its parent's active child, family by family
    select(*(_n[c.key] for c in _CHILD), _parent.c.active_child_id.label("active"))
    .select_from(Node.__table__.outerjoin(_parent, _parent.c.id == _n.parent_id))
    .where(_n.adventure_id == bindparam("adventure"))
    .order_by(_n.parent_id, _n.id)
)
_COUNT = text(
    "UPDATE nodes SET child_count = (SELECT count(*) FROM nodes AS c "
    "WHERE c.adventure_id = nodes.adventure_id AND c.parent_id = nodes.id) "
    "WHERE adventure_id = :adventure"
)
