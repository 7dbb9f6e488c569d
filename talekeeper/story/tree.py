"""The story tree and its head. Nothing outside `story/` moves an adventure's head, and
every move goes through `move_head` here.

Nodes are immutable once written — but for one completion: a turn written before its
background step (the state pass, a companion's remark) is named by its adventure's
`pending_turn_id`, and `settle` completes it once, before anything is written after it.
The transcript is the path root → head; every read
of "the story now" starts from the head, so transcript, state and prompt always agree.

Invariant kept by every writer: a node's `active_child_id` is None exactly when it has
no children (it is the end of a line), so "is this the end of a line?" is one row read.
Takes (`takes.py`), lines (`branches.py`) and Save Points (`savepoints.py`) build on this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import Session, defer, object_session
from sqlalchemy.orm.util import identity_key

from talekeeper.errors import Conflict
from talekeeper.store.models import Adventure, Node, utcnow
from talekeeper.story import canon_versions, chains, line_ends

_nodes = Node.__table__.c


class TreeError(Conflict):
    """An operation the tree refuses; the message says why and what to do instead."""


@dataclass(frozen=True)
class NewTurn:
    action_kind: str
    action_text: str
    narration: str
    reasoning: str = ""
    state: dict[str, Any] | None = None
    proposal: dict[str, Any] | None = None
    model: str = ""
    take_of: int | None = None  # the sibling it tells again (`takes.families`); None: a new action


def create_root(
    session: Session, adventure: Adventure, opening: str, state: dict[str, Any]
) -> Node:
    root = Node(
        adventure_id=adventure.id,
        parent_id=None,
        depth=0,
        action_kind="opening",
        action_text="",
        narration=opening,
        reasoning="",
        state=state,
        model="",
    )
    root.line_end, root.child_count = True, 0
    session.add(root)
    chains.start(session, root)
    session.flush()
    adventure.root_node_id = root.id
    adventure.head_node_id = root.id
    return root


def rewrite_opening(session: Session, adventure: Adventure, root: Node, narration: str) -> Node:
    """Replace the opening's text before anything was written from it.

    The one exception to "nodes are immutable": until the first turn is played nothing
    rests on the opening (no turn, take, line, memory or Insights), so changing it in place
    loses nothing. Once a turn follows it, later turns were told from it, and it is refused.
    """
    if root.parent_id is not None or root.adventure_id != adventure.id:
        raise TreeError(
            "Only the opening is rewritten in place; a later turn's edit is a new take."
        )
    if root.active_child_id is not None:
        raise TreeError(
            "The opening can be edited until the first turn is played; the story after it was told from it. "
            "Edit a later turn instead, or start a new adventure."
        )
    root.narration = narration
    return root


def head(session: Session, adventure: Adventure) -> Node:
    node = session.get(Node, adventure.head_node_id)
    if node is None or node.adventure_id != adventure.id:
        raise TreeError("This adventure's current position is missing; restore a Save Point.")
    return node


def append_child(session: Session, adventure: Adventure, parent: Node, turn: NewTurn) -> Node:
    """Write a new node below `parent` and move the head to it.

    If `parent` already has children this forks the story (or, below the same parent as
    an earlier turn, adds a take): the old continuation stays whole; Redo now follows the
    new one because it becomes the active child. When `parent` was the end of a named
    line, the line grows and its name moves down to the new end.
    """
    extends_line = parent.active_child_id is None
    node = Node(
        adventure_id=adventure.id,
        parent_id=parent.id,
        depth=parent.depth + 1,
        action_kind=turn.action_kind,
        action_text=turn.action_text,
        narration=turn.narration,
        reasoning=turn.reasoning,
        state=turn.state,
        proposal=turn.proposal,
        model=turn.model,
        take_of=turn.take_of,
        line_end=extends_line,  # (an only child ends its line: nothing to write when settled)
    )
    if extends_line and parent.branch_name:
        node.branch_name, parent.branch_name = parent.branch_name, None
    if extends_line:
        node.chain = parent.chain  # it goes on with its parent's redo chain (story/chains)
        parent.line_end = False  # (no longer a leaf; its takes' ends are settled below)
        line_ends.touch(session, adventure.id, parent.parent_id)
    parent.child_count = (parent.child_count or 0) + 1
    session.add(node)
    session.flush()
    if extends_line:
        parent.active_child_id = node.id
    else:
        chains.link(session, parent, node)  # a fork or a take: Redo now follows it
    line_ends.touch(session, adventure.id, parent.id)
    move_head(adventure, node)
    return node


def mark_pending(adventure: Adventure, node: Node) -> None:
    """`node`, just written at the head, has a background step still to settle it."""
    adventure.pending_turn_id = node.id


def settle(
    adventure: Adventure,
    node: Node,
    *,
    state: dict[str, Any] | None,
    proposal: dict[str, Any] | None,
    narration: str | None = None,
) -> None:
    """Complete the pending `node` — its state, its proposal's record and (a companion's
    remark added) its narration — and clear the mark. Only the pending turn is settled,
    once: every other node stays as it was written."""
    if adventure.pending_turn_id != node.id or node.adventure_id != adventure.id:
        raise TreeError("This turn has already been settled; nothing was changed.")
    node.state = state
    node.proposal = proposal
    if narration is not None:
        node.narration = narration
    adventure.pending_turn_id = None


def set_active(session: Session, adventure: Adventure, parent: Node, child: Node) -> None:
    """Redo from `parent` now follows `child` (its redo chains and line ends kept)."""
    chains.link(session, parent, child)
    line_ends.touch(session, adventure.id, parent.id)


def _parent_and_children(session: Session, node_id: int | None) -> Any:
    """The turn the head leaves: as loaded where it is, else two columns, never the whole
    row (its state snapshot is large, and a turn reads one snapshot only)."""
    if node_id is None:
        return None
    loaded = session.identity_map.get(identity_key(Node, node_id))
    if loaded is not None:
        return loaded
    with session.no_autoflush:
        return session.execute(_LEFT, {"id": node_id}).first()


# (built once on the table: building an ORM statement costs more than the query)
_LEFT = select(_nodes.parent_id, _nodes.child_count).where(_nodes.id == bindparam("id"))


def move_head(adventure: Adventure, node: Node) -> None:
    """Point the adventure at `node`: one row written; what is read next is read there.
    An adventure updated from its scenario takes the canon in force there along
    (story/canon_versions; nothing to do for one never updated). A take read ends a line,
    so where the head leaves or reaches a leaf, its parent's line ends are settled."""
    session = object_session(node)
    if session is not None:
        left = _parent_and_children(session, adventure.head_node_id)
        line_ends.touch(
            session,
            adventure.id,
            left.parent_id if left is not None and not left.child_count else None,
            node.parent_id if not node.child_count else None,
        )
    adventure.head_node_id = node.id
    adventure.turn_count = node.depth
    adventure.last_played_at = utcnow()
    if adventure.canon:
        canon_versions.follow(adventure, node)


_PATH_SQL = text(
    """
    WITH RECURSIVE path(id, parent_id, n) AS (
        SELECT id, parent_id, 0 FROM nodes WHERE id = :start
        UNION ALL
        SELECT nodes.id, nodes.parent_id, path.n + 1
        FROM nodes JOIN path ON nodes.id = path.parent_id
        WHERE path.n + 1 < :limit
    )
    SELECT id FROM path ORDER BY n DESC
    """
)


def path_ids(session: Session, node: Node, limit: int | None = None) -> list[int]:
    """The ids from the root (or the `limit`th ancestor) down to `node`, in story order.

    One recursive query that stops after `limit` rows: reading the last N turns costs
    O(N), never O(story length).
    """
    limit = limit if limit is not None else node.depth + 1
    return [row[0] for row in session.execute(_PATH_SQL, {"start": node.id, "limit": limit})]


def path_to(session: Session, node: Node, limit: int | None = None) -> list[Node]:
    """The nodes on `path_ids`. Their state snapshots are not loaded (the state is read at
    the head); touching one loads it."""
    ids = path_ids(session, node, limit)
    query = select(Node).where(Node.id.in_(ids)).options(defer(Node.state))
    by_id = {n.id: n for n in session.scalars(query)}
    return [by_id[i] for i in ids]


def ancestor_at(session: Session, node: Node, depth: int) -> Node | None:
    """The node on the path to `node` at `depth` (None if deeper than `node`)."""
    if depth > node.depth or depth < 0:
        return None
    ids = path_ids(session, node, limit=node.depth - depth + 1)
    return session.get(Node, ids[0])


def find_node(session: Session, adventure: Adventure, node_id: int) -> Node | None:
    node = session.get(Node, node_id)
    return node if node is not None and node.adventure_id == adventure.id else None


def parent_for_take(session: Session, node: Node) -> Node:
    """Where a new take of `node` is written: below the same parent (retry, edits)."""
    parent = session.get(Node, take_parent_id(node.parent_id))
    assert parent is not None
    return parent


def take_parent_id(parent_id: int | None) -> int:
    """The parent a new take of a turn whose parent is `parent_id` is written below; the
    opening (no parent) has no takes."""
    if parent_id is None:
        raise TreeError(
            "The opening is not an answer to an action, so it has no takes. "
            "Retry or edit a later turn instead."
        )
    return parent_id


def can_undo(node: Node) -> bool:
    return node.parent_id is not None


def can_redo(node: Node) -> bool:
    return node.active_child_id is not None


def undo(session: Session, adventure: Adventure) -> Node:
    current = head(session, adventure)
    if current.parent_id is None:
        raise TreeError("Nothing to undo: this is the opening of the story.")
    parent = session.get(Node, current.parent_id)
    assert parent is not None
    set_active(session, adventure, parent, current)  # so Redo returns exactly here
    move_head(adventure, parent)
    return parent


def redo(session: Session, adventure: Adventure) -> Node:
    current = head(session, adventure)
    if current.active_child_id is None:
        raise TreeError("Nothing to redo: this is the latest moment on this line.")
    child = session.get(Node, current.active_child_id)
    assert child is not None
    move_head(adventure, child)
    return child
