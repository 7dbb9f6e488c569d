"""Lines (branches): the continuations the player wrote, and the path that leads to each.

A line is named by its last turn (a leaf). It may carry a name, kept on that last turn;
when the line grows the name moves down with it (`tree.append_child`). Not every leaf is a
line: the other takes of a turn (a retry or an edit: the turn told again, `takes.families`)
are read through that turn's `‹ 2/3 ›`, and an undone correction is not a line at all. A
different action written after going back is a line, and so is any take that goes on, or
one being read, saved or named (`_Skeleton._is_line_end`).

- **Where it left its parent line**: walking up from the end, the first turn that is not
  the oldest child (that leads to a line) of its parent is where this line forked off; above it the line shares
  its parent line's story. The line with no such turn is the first line of the story.
- **Its own turns**: the turns no other line passes through — exactly what deleting the
  line removes (with the bare takes hanging off them). Everything above them is shared with
  another line and stays.

Listing (`list_lines`) starts from the line ends the tree keeps (`line_ends`) and reads
each end's path as a few redo chains' stretches (`chains`), so it costs what the lines and
the places they part cost, not the story's length; no snapshot or narration is loaded
except the last turn's text of each line. `list_lines_slow` works the same out from the
whole tree (one narrow row per node): the tests hold the two equal, and deleting a line
still reads the whole tree (`_Skeleton`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, text, true, update
from sqlalchemy.orm import Session

from talekeeper.store.models import Adventure, Node, SavePoint
from talekeeper.story import chains, line_ends, takes, tree
from talekeeper.story.takes import STEPS, Sibling, families
from talekeeper.story.tree import TreeError

MAX_NAME = 80
NAMED_IN_REFUSAL = 3
_CHUNK = 500
_RANGES = 200  # indexed ranges OR-ed in one query


@dataclass(frozen=True)
class Line:
    id: int  # its last turn; it changes when the line grows
    name: str | None
    length: int  # turns after the opening
    fork_id: int | None  # the turn it left its parent line after (None: the first line)
    fork_depth: int | None
    parent_line: int | None  # the line it left (None: the first line)
    own_turns: int  # turns only this line has: what deleting it removes (0: cannot)
    has_head: bool  # the moment being read is on this line
    ends_at_head: bool
    save_points: tuple[str, ...]  # names of the Save Points on its own turns
    last_action_kind: str
    last_action_text: str
    last_narration: str
    created_at: datetime | None


class _Skeleton:
    """The adventure's tree as plain ids, with the per-node facts lines are made of."""

    def __init__(self, session: Session, adventure: Adventure):
        nodes = Node.__table__.c  # Core, not ORM rows: 10,000 narrow tuples, no per-row objects
        rows = list(
            session.connection().execute(
                select(
                    nodes.id,
                    nodes.parent_id,
                    nodes.depth,
                    nodes.active_child_id,
                    nodes.branch_name.is_not(None),
                ).where(nodes.adventure_id == adventure.id)
            )
        )
        rows.sort(key=lambda r: (r[2], r[0]))  # parents before children, oldest child first
        self.root = adventure.root_node_id
        self.head = adventure.head_node_id
        self.depth: dict[int, int] = {r[0]: r[2] for r in rows}
        self.parent: dict[int, int | None] = {r[0]: r[1] for r in rows}
        self.active: dict[int, int | None] = {r[0]: r[3] for r in rows}
        named = {r[0] for r in rows if r[4]}
        self.saved = set(
            session.scalars(select(SavePoint.node_id).where(SavePoint.adventure_id == adventure.id))
        )
        self.children: dict[int, list[int]] = {}
        for node_id, parent, *_ in rows:
            if parent is not None:
                self.children.setdefault(parent, []).append(node_id)
        order = [r[0] for r in rows]
        # Families only where a turn has several children and one is bare: all _is_line_end
        # and own_ids read.
        forks = [
            p
            for p, kids in self.children.items()
            if len(kids) > 1 and any(k not in self.children for k in kids)
        ]
        self.kind: dict[int, str] = {}
        self.family: dict[int, int] = {}  # a take → the first take of its turn (takes.families)
        for i in range(0, len(forks), _CHUNK):
            query = select(
                nodes.parent_id, nodes.id, nodes.action_kind, nodes.action_text, nodes.take_of
            ).where(nodes.adventure_id == adventure.id, nodes.parent_id.in_(forks[i : i + _CHUNK]))
            by_parent: dict[int, list[Sibling]] = {}
            for r in session.connection().execute(query):
                by_parent.setdefault(r[0], []).append(Sibling(*r[1:]))
                self.kind[r[1]] = r[2]
            for siblings in by_parent.values():
                self.family.update(families(siblings))
        self.visible = {leaf for leaf in self.leaves if leaf in named or self._is_line_end(leaf)}
        # Bottom-up: how many lines pass through each node, and which one if only one.
        self.leaf_count: dict[int, int] = {}
        self.only_leaf: dict[int, int | None] = {}
        for node_id in reversed(order):
            kids = [k for k in self.children.get(node_id, []) if self.leaf_count[k]]
            if node_id not in self.children:
                seen = node_id in self.visible
                self.leaf_count[node_id], self.only_leaf[node_id] = (
                    int(seen),
                    node_id if seen else None,
                )
            else:
                self.leaf_count[node_id] = sum(self.leaf_count[k] for k in kids)
                self.only_leaf[node_id] = self.only_leaf[kids[0]] if len(kids) == 1 else None
        # Top-down: where each node's line starts, and whether the head is at or above it.
        self.line_start: dict[int, int] = {}
        self.under_head: dict[int, bool] = {}
        self.first_child: dict[int, int] = {}  # the oldest continuation that leads to a line
        for node_id in order:
            kids = [k for k in self.children.get(node_id, []) if self.leaf_count[k]]
            if kids:
                self.first_child[node_id] = kids[0]
            p = self.parent[node_id]
            if p is None:
                self.line_start[node_id] = node_id
                self.under_head[node_id] = node_id == self.head
                continue
            first = self.first_child.get(p) == node_id
            self.line_start[node_id] = self.line_start[p] if first else node_id
            self.under_head[node_id] = node_id == self.head or self.under_head[p]
        # Top-down again: the first of a run of nodes that only one line passes through.
        self.own_top: dict[int, int] = {}
        for node_id in order:
            p = self.parent[node_id]
            shared_parent = p is None or self.leaf_count[p] > 1
            self.own_top[node_id] = node_id if shared_parent else self.own_top[p]

    def _is_line_end(self, leaf: int) -> bool:
        """A line is a continuation the player wrote; the other takes of a turn (retries and
        edits: the turn told again, `takes.families`) are read through that turn's `‹ 2/3 ›`,
        and an undone correction is no line at all. So of the bare takes of one turn, only
        one ends a line (the one read, else the one Redo follows, else
        the newest), and none does when a take with that action goes on. A take being read,
        saved or named always ends a line."""
        if leaf == self.root or leaf in self.saved:
            return True
        parent = self.parent[leaf]
        assert parent is not None
        if len(self.children[parent]) == 1:
            return True
        if self.kind[leaf] in STEPS and leaf not in (self.head, self.active[parent]):
            return False  # undone, and something else was written in its place
        if leaf == self.head:
            return True
        same = [k for k in self.children[parent] if self.family.get(k) == self.family[leaf]]
        if any(k in self.children for k in same):
            return False
        for rep in (self.head, self.active[parent]):
            if rep in same:
                return leaf == rep
        return leaf == max(same)

    @property
    def leaves(self) -> list[int]:
        return [i for i in self.parent if i not in self.children]

    def own_ids(self, leaf: int) -> list[int]:
        """The turns only `leaf`'s line has, last first, and then the bare takes hanging off
        them or beside its first own turn (they go with it); empty if it is the only line. A bare take that is not a line
        of its own is just itself."""
        if not self.leaf_count[leaf]:
            return [leaf]
        top = self.own_top[leaf]
        if top == self.root:
            return []
        ids, node = [], leaf
        while True:
            ids.append(node)
            if node == top:
                break
            node = self.parent[node]  # type: ignore[assignment]
        on_line = set(ids)
        hanging = [k for n in ids for k in self.children.get(n, []) if k not in on_line]
        # The other takes of the line's first own turn (no line of their own) go with it, or
        # deleting the line would only bring one of them back as a line.
        siblings = self.children[self.parent[top]]  # type: ignore[index]
        takes = [
            k
            for k in siblings
            if k != top
            and not self.leaf_count[k]
            and self.family.get(k, k) == self.family.get(top, top)
        ]
        return ids + hanging + takes

    def owner(self, node_id: int) -> int | None:
        """The one line whose own turns include `node_id`, if only one line passes it."""
        if node_id not in self.parent or self.leaf_count[node_id] != 1:
            return None
        return self.only_leaf[node_id]

    def end_of(self, node_id: int) -> int:
        """The line a turn is on when every later turn is the oldest continuation."""
        while node_id in self.first_child:
            node_id = self.first_child[node_id]
        return node_id


def list_lines_slow(session: Session, adventure: Adventure) -> list[Line]:
    """Every line of the story, oldest first, worked out from the whole tree (O(story)):
    what `list_lines` must always equal (the tests hold it to that)."""
    sk = _Skeleton(session, adventure)
    leaves = sorted(sk.visible)
    saved: dict[int, list[str]] = {}
    for node_id, name in session.execute(
        select(SavePoint.node_id, SavePoint.name)
        .where(SavePoint.adventure_id == adventure.id)
        .order_by(SavePoint.id)
    ):
        owner = sk.owner(node_id)
        if owner is not None and owner != sk.root:
            saved.setdefault(owner, []).append(name)
    ends = {
        r.id: r
        for r in session.execute(
            select(
                Node.id,
                Node.action_kind,
                Node.action_text,
                Node.narration,
                Node.branch_name,
                Node.created_at,
            ).where(Node.id.in_(leaves))
        )
    }
    lines = []
    for leaf in sorted(leaves):
        start = sk.line_start[leaf]
        fork = sk.parent[start]
        own = sk.own_ids(leaf)
        end = ends[leaf]
        parent_line = sk.end_of(fork) if fork is not None else None
        lines.append(
            Line(
                id=leaf,
                name=end.branch_name,
                length=sk.depth[leaf],
                fork_id=fork,
                fork_depth=sk.depth[fork] if fork is not None else None,
                parent_line=parent_line if parent_line != leaf else None,
                own_turns=len(own),
                has_head=sk.under_head[leaf],
                ends_at_head=leaf == sk.head,
                save_points=tuple(saved.get(leaf, ())),
                last_action_kind=end.action_kind,
                last_action_text=end.action_text,
                last_narration=end.narration,
                created_at=end.created_at,
            )
        )
    return lines


_END = select(
    Node.id,
    Node.adventure_id,
    Node.depth,
    Node.chain,
    Node.action_kind,
    Node.action_text,
    Node.narration,
    Node.branch_name,
    Node.created_at,
)


@dataclass
class _Branch:
    """A turn two or more lines pass through and part at: the turn (chain, depth) and, per
    way on, the lines that take it and the next branch or line end on it."""

    chain: int
    depth: int
    ways: list[list[int]]  # line ends, per child that leads to a line
    node: int = 0
    children: list[int] = field(default_factory=list)  # the child each way starts with
    after: list[int | None] = field(default_factory=list)  # its next branch (index), if any


def list_lines(session: Session, adventure: Adventure) -> list[Line]:
    """Every line of the story, oldest first, from what the tree keeps: the line ends
    (`line_ends`) and the redo chains (`chains`), so its cost follows the number of lines
    and the places they part, not the story's length.

    Each end's path is a few chains' stretches; comparing them finds the turns where lines
    part (two paths hold the same turn at a depth exactly when the same chain does), and
    from those every field: where a line left its parent line (the deepest parting where
    it does not take the oldest way on), that parent line (the oldest way on from there),
    and its own turns (below its last parting: their count and their hanging takes follow
    from the turns' children, `Node.child_count`, read where it is not one). A query a
    step, each for every line at once."""
    line_ends.settle(session)
    head = tree.head(session, adventure)
    ends, paths, branches = _read_partings(session, adventure.id)
    last = _last_partings(branches)
    saves = session.execute(
        select(SavePoint.node_id, SavePoint.name, Node.chain, Node.depth)
        .join(Node, Node.id == SavePoint.node_id)
        .where(SavePoint.adventure_id == adventure.id)
        .order_by(SavePoint.id)
    ).all()
    beside = _bare_takes(session, adventure.id, [(b, way) for b, way, _ in last.values()])
    below_parting = {  # each line's turns below its last parting: only that line has them
        e: (b.depth + 1, ends[e].depth) for e, (b, _, _) in last.items()
    }
    children = _children_below(session, adventure.id, paths, below_parting)
    lines = []
    for e in sorted(ends):
        end, path = ends[e], paths[e]
        parting, way, fork = last.get(e, (None, 0, None))
        parent_line = _oldest_end(branches, fork) if fork is not None else None
        own, mine = 0, e != adventure.root_node_id
        below = -1  # the depth below which the line's turns are its own
        if parting is not None:
            below = parting.depth
            top = parting.children[way]
            own = 1 + children[e]
            own += len(beside.get((parting.node, top), ()))
        lines.append(
            Line(
                id=e,
                name=end.branch_name,
                length=end.depth,
                fork_id=fork.node if fork is not None else None,
                fork_depth=fork.depth if fork is not None else None,
                parent_line=parent_line if parent_line != e else None,
                own_turns=own,
                has_head=chains.on_path(path, head.chain, head.depth),
                ends_at_head=e == head.id,
                save_points=tuple(
                    s.name
                    for s in saves
                    if mine and s.depth > below and chains.on_path(path, s.chain, s.depth)
                ),
                last_action_kind=end.action_kind,
                last_action_text=end.action_text,
                last_narration=end.narration,
                created_at=end.created_at,
            )
        )
    return lines


def _partings(paths: dict[int, chains.Path]) -> list[_Branch]:
    """The turns where the paths part, each with the ends that take each way on.

    A group of ends shares one chain down to where the first of them leaves it (its
    stretch's last depth), kept ordered by that depth: at each such depth the ends leaving
    the chain part from the ones staying on it, and only the leaving ones are looked at
    again (on their next chain). So each end is handled once per stretch of its path, not
    once per parting above it: with many lines the cost follows them, not their square."""
    found: list[_Branch] = []
    at = dict.fromkeys(paths, 0)  # each end's stretch (index) on the chain its group is on

    def group_on(ends: list[int]) -> list[int]:
        return sorted(ends, key=lambda e: paths[e][at[e]].last)

    # ends sharing a turn on one chain, and the way (branch index, way) they came by
    todo: list[tuple[list[int], tuple[int, int] | None]] = [(group_on(list(paths)), None)]
    while todo:
        group, came = todo.pop()
        while len(group) >= 2:
            first = paths[group[0]][at[group[0]]]
            depth = first.last  # the first of them leaves the chain below here
            leaving = 0
            while leaving < len(group) and paths[group[leaving]][at[group[leaving]]].last == depth:
                leaving += 1
            ways: dict[int, list[int]] = {}
            for e in group[:leaving]:
                at[e] += 1
                assert at[e] < len(paths[e])  # (an end is a leaf: nothing else goes through it)
                ways.setdefault(paths[e][at[e]].chain, []).append(e)
            staying = group[leaving:]
            if not staying and len(ways) == 1:  # all go on to the same chain: no parting
                group = group_on(group)
                continue
            parted = ([staying] if staying else []) + list(ways.values())
            if came is not None:
                found[came[0]].after[came[1]] = len(found)
            here = len(found)
            found.append(_Branch(first.chain, depth, parted, after=[None] * len(parted)))
            todo += [
                (group_on(members), (here, way))
                for way, members in enumerate(parted)
                if members is not staying
            ]
            group, came = staying, (here, 0)
    return found


def _last_partings(branches: list[_Branch]) -> dict[int, tuple[_Branch, int, _Branch | None]]:
    """For each end below a parting: the last parting on its path and the way it takes
    there, and the deepest parting where it does not take the oldest way on (None: none
    does). One walk down the partings (`_Branch.after`), each taken once."""
    out: dict[int, tuple[_Branch, int, _Branch | None]] = {}
    stack: list[tuple[int, _Branch | None]] = [(0, None)] if branches else []
    while stack:
        i, fork = stack.pop()
        b = branches[i]
        oldest = min(b.children)
        for way, nxt in enumerate(b.after):
            deepest = b if b.children[way] != oldest else fork
            if nxt is None:
                (end,) = b.ways[way]  # (ends that part no more: one)
                out[end] = (b, way, deepest)
            else:
                stack.append((nxt, deepest))
    return out


def _read_partings(
    session: Session, adventure_id: int
) -> tuple[dict[int, Any], dict[int, chains.Path], list[_Branch]]:
    """Every line's end and path, and where the lines part, with the parting turns and
    each way's first turn named: what listing the lines and deleting one both start from."""
    ends = {
        r.id: r
        for r in session.execute(
            _END.where(Node.adventure_id == adventure_id, Node.line_end == true())
        )
    }
    paths = chains.paths(session, adventure_id, ends)
    branches = _partings(paths)
    _name_turns(session, adventure_id, branches, paths)
    return ends, paths, branches


def _name_turns(
    session: Session, adventure_id: int, branches: list[_Branch], paths: dict[int, chains.Path]
) -> None:
    """Read the ids of the parting turns and of each way's first turn (a chain and a depth
    name one turn)."""
    wanted = set()
    for b in branches:
        wanted.add((b.chain, b.depth))
        for members in b.ways:
            wanted.add((chains.chain_at(paths[members[0]], b.depth + 1).chain, b.depth + 1))
    ids: dict[tuple[int, int], int] = {}
    by_chain: dict[int, list[int]] = {}
    for chain, depth in sorted(wanted):
        by_chain.setdefault(chain, []).append(depth)
    groups = list(by_chain.items())
    for i in range(0, len(groups), _RANGES):
        query = _each(
            "chain, depth, id",
            adventure_id,
            [
                f"chain = {chain:d} AND depth IN ({', '.join(f'{d:d}' for d in depths)})"
                for chain, depths in groups[i : i + _RANGES]
            ],
        )
        for row in session.execute(query):
            ids[(row.chain, row.depth)] = row.id
    for b in branches:
        b.node = ids[(b.chain, b.depth)]
        for members in b.ways:
            b.children.append(
                ids[(chains.chain_at(paths[members[0]], b.depth + 1).chain, b.depth + 1)]
            )


def _oldest_end(branches: list[_Branch], b: _Branch) -> int:
    """The line a turn is on when every later turn is the oldest way on."""
    while True:
        way = b.children.index(min(b.children))
        nxt = b.after[way]
        if nxt is None:
            return b.ways[way][0]
        b = branches[nxt]


def _each(columns: str, adventure_id: int, terms: list[str]) -> Any:
    """One query reading `columns` of the adventure's nodes that meet each of `terms`
    (conditions made of integers only), one indexed range a term, the answers put
    together; written as text, since building hundreds of expressions costs more than the
    query (and an OR of the terms is read as a scan of the whole adventure)."""
    return text(
        " UNION ALL ".join(
            f"SELECT {columns} FROM nodes WHERE adventure_id = {adventure_id:d} AND {t}"
            for t in terms
        )
    )


def _children_below(
    session: Session,
    adventure_id: int,
    paths: dict[int, chains.Path],
    spans: dict[int, tuple[int, int]],
) -> dict[int, int]:
    """For each end, how many children its path's turns from depth `first` to `last`
    (`spans`) have in all: most turns have one, so only the others are read (indexed
    ranges of the redo chains, a few hundred to a query)."""
    ranges = []  # (end, chain, low, high)
    for e, (first, last) in spans.items():
        for s in paths[e]:
            low, high = max(first, s.first), min(last, s.last)
            if low <= high:
                ranges.append((e, s.chain, low, high))
    total = {e: 0 for e in spans}
    by_chain: dict[int, list[tuple[int, int, int]]] = {}
    for e, chain, low, high in ranges:
        total[e] += high - low + 1
        by_chain.setdefault(chain, []).append((e, low, high))
    for i in range(0, len(ranges), _RANGES):
        rows = session.execute(
            _each(
                "chain, depth, child_count",
                adventure_id,
                [
                    f"chain = {chain:d} AND depth BETWEEN {low:d} AND {high:d} AND child_count != 1"
                    for _, chain, low, high in ranges[i : i + _RANGES]
                ],
            )
        )
        for chain, depth, count in rows:
            for e, low, high in by_chain[chain]:
                if low <= depth <= high:
                    total[e] += count - 1
    return total


def _bare_takes(
    session: Session, adventure_id: int, steps: list[tuple[_Branch, int]]
) -> dict[tuple[int, int], list[int]]:
    """For each (parting turn, way on): the other takes of that way's first turn that end no
    line and go nowhere (they go with the line when it is deleted)."""
    if not steps:
        return {}
    parents = {b.node for b, _ in steps}
    rows = session.execute(
        select(
            Node.parent_id,
            Node.id,
            Node.action_kind,
            Node.action_text,
            Node.take_of,
            Node.child_count,
            Node.line_end,
        ).where(Node.adventure_id == adventure_id, Node.parent_id.in_(list(parents)))
    ).all()
    by_parent: dict[int, list[Any]] = {}
    for r in rows:
        by_parent.setdefault(r.parent_id, []).append(r)
    out: dict[tuple[int, int], list[int]] = {}
    for b, way in steps:
        top, siblings = b.children[way], by_parent.get(b.node, [])
        family = families(Sibling(r.id, r.action_kind, r.action_text, r.take_of) for r in siblings)
        out[(b.node, top)] = [
            r.id
            for r in siblings
            if r.id != top and not r.child_count and not r.line_end and family[r.id] == family[top]
        ]
    return out


def _end_of_line(session: Session, node: Node) -> Node:
    if node.active_child_id is not None:
        raise TreeError(
            "That turn is not the end of a line: the story goes on below it. "
            "Lines are named by their last turn; list the lines to find it."
        )
    return node


def rename(session: Session, adventure: Adventure, leaf: Node, name: str | None) -> Node:
    """Name a line (None or blank clears the name). Only the label changes."""
    _end_of_line(session, leaf)
    name = (name or "").strip() or None
    if name is not None and len(name) > MAX_NAME:
        raise TreeError(f"A line's name can be at most {MAX_NAME} characters.")
    leaf.branch_name = name
    line_ends.touch(session, adventure.id, leaf.parent_id)  # a named take ends a line
    return leaf


def switch(session: Session, adventure: Adventure, leaf: Node) -> Node:
    """Read another line: the head moves to its last turn. Nothing is written or deleted."""
    _end_of_line(session, leaf)
    tree.move_head(adventure, leaf)
    return leaf


def delete_turn(session: Session, adventure: Adventure, node: Node) -> Node:
    """Delete one turn with nothing written after it: a take, or the last turn of a line.
    Returns the turn now being read.

    Nothing else changes: the turns before it, its other takes and every other line stay.
    Read there, the story moves to another take of the same turn, else back one turn.
    Refused, changing nothing, for the opening, a turn something was written after (delete
    the line below it instead), and a turn a Save Point keeps.
    """
    if node.parent_id is None:
        raise TreeError("The opening can't be deleted; start a new adventure instead.")
    if session.scalar(select(Node.id).where(Node.parent_id == node.id).limit(1)) is not None:
        raise TreeError(
            "The story goes on after this turn, so it can't be deleted on its own. Delete "
            "the line below it (Lines), or read its last turn and delete that."
        )
    saved = list(session.scalars(select(SavePoint.name).where(SavePoint.node_id == node.id)))
    if saved:
        raise TreeError(
            f"The Save Point {_names(saved)} keeps this turn. Delete the Save Point first "
            "(that deletes none of the story), then the turn."
        )
    parent = session.get(Node, node.parent_id)
    assert parent is not None
    siblings = takes.sibling_ids(session, node)
    others = [s for s in siblings if s != node.id]
    here = siblings.index(node.id)
    stay = others[here - 1] if here > 0 else (others[0] if others else None)
    remaining = sorted(
        session.scalars(select(Node.id).where(Node.parent_id == parent.id, Node.id != node.id))
    )
    redo = stay if stay is not None else (remaining[-1] if remaining else None)
    follows = parent.active_child_id == node.id
    if node.branch_name and not remaining:  # the line ends one turn sooner, with its name
        parent.branch_name = node.branch_name
    # a take that retold this one retells what this one retold (a take is a sibling: looked
    # up among them by index, not through every turn of every story)
    session.execute(
        update(Node)
        .where(Node.parent_id == node.parent_id, Node.take_of == node.id)
        .values(take_of=node.take_of)
    )
    reading = adventure.head_node_id == node.id
    if reading:
        tree.move_head(adventure, session.get(Node, stay) if stay is not None else parent)
    session.flush()
    session.execute(delete(Node).where(Node.id == node.id))
    if follows:  # Redo followed it: now its other take, else the newest turn left, else none
        if redo is None:
            parent.active_child_id = None  # (its redo chain now ends at the parent)
        else:
            tree.set_active(session, adventure, parent, session.get(Node, redo))
    parent.child_count -= 1
    line_ends.touch(session, adventure.id, parent.id)
    if not remaining:  # the parent ends its line again
        line_ends.touch(session, adventure.id, parent.parent_id)
        parent.line_end = parent.parent_id is None  # (the opening, alone again)
    return tree.head(session, adventure)


def _names(names: list[str]) -> str:
    quoted = [f"“{n}”" for n in names[:NAMED_IN_REFUSAL]]
    more = len(names) - len(quoted)
    return ", ".join(quoted) + (f" and {more} more" if more else "")


_SIBLING = (Node.id, Node.action_kind, Node.action_text, Node.take_of)


def _own_turns(session: Session, adventure: Adventure, leaf: Node) -> tuple[list[int], int]:
    """The turns only `leaf`'s line has, last first, then the bare takes hanging off them or
    beside its first own turn (they go with it); and that first own turn. Empty if it is the
    only line; a bare take that is no line of its own is just itself. Read from the lines'
    partings (`list_lines`), so it costs the lines and the line's own turns, not the story."""
    if not leaf.line_end:
        return [leaf.id], leaf.id
    _, paths, found = _read_partings(session, adventure.id)
    if not found:
        return [], adventure.root_node_id
    parting, way, _ = _last_partings(found)[leaf.id]
    top = parting.children[way]
    line = chains.ids_on(session, adventure.id, paths[leaf.id], parting.depth + 1, leaf.depth)
    on_line = set(line)
    hanging = sorted(  # (an unordered read: ordered by id, SQLite would walk every node)
        r.id
        for i in range(0, len(line), _CHUNK)
        for r in session.execute(
            select(Node.id).where(
                Node.adventure_id == adventure.id, Node.parent_id.in_(line[i : i + _CHUNK])
            )
        )
        if r.id not in on_line
    )
    siblings = session.execute(  # the parting turn's children (its index, by parent)
        select(*_SIBLING, Node.child_count, Node.line_end).where(
            Node.adventure_id == adventure.id, Node.parent_id == parting.node
        )
    ).all()
    family = families(Sibling(r.id, r.action_kind, r.action_text, r.take_of) for r in siblings)
    beside = [
        r.id
        for r in siblings
        if not r.child_count and not r.line_end and family[r.id] == family[top]
    ]
    return [*reversed(line), *hanging, *sorted(beside)], top


def delete_line(session: Session, adventure: Adventure, leaf: Node) -> int:
    """Delete a line's own turns (none that another line shares). Returns how many.

    Refused, changing nothing, while the line holds the moment being read or a Save Point.
    """
    _end_of_line(session, leaf)
    line_ends.settle(session)
    head = tree.head(session, adventure)
    if chains.on_path(chains.segments(session, leaf), head.chain, head.depth):
        raise TreeError(
            "You are reading this line, so it can't be deleted. Switch to another line "
            "first, then delete this one."
        )
    own, top = _own_turns(session, adventure, leaf)
    if not own:
        raise TreeError("This is the only line of the story, so it can't be deleted.")
    own_set = set(own)
    saved = [
        name
        for node_id, name in session.execute(
            select(SavePoint.node_id, SavePoint.name)
            .where(SavePoint.adventure_id == adventure.id)
            .order_by(SavePoint.id)
        )
        if node_id in own_set
    ]
    if saved:
        noun = "a Save Point" if len(saved) == 1 else f"{len(saved)} Save Points"
        raise TreeError(
            f"This line holds {noun}: {_names(saved)}. Delete "
            f"{'that Save Point' if len(saved) == 1 else 'those Save Points'} first if you no "
            "longer need them (deleting a Save Point deletes none of the story), then delete "
            "the line."
        )
    fork = session.get(Node, session.get(Node, top).parent_id)
    assert fork is not None
    children = list(
        session.scalars(
            select(Node.id).where(Node.adventure_id == adventure.id, Node.parent_id == fork.id)
        )
    )
    remaining = [c for c in children if c not in own_set]
    # Unlink first so no cascade runs down a long line, then delete in bounded batches.
    for i in range(0, len(own), _CHUNK):
        batch = own[i : i + _CHUNK]
        session.execute(update(Node).where(Node.id.in_(batch)).values(parent_id=None))
        session.execute(delete(Node).where(Node.id.in_(batch)))
    if fork.active_child_id not in remaining:  # Redo followed the deleted line: the newest left
        tree.set_active(session, adventure, fork, session.get(Node, max(remaining)))
    fork.child_count -= len(children) - len(remaining)
    line_ends.touch(session, adventure.id, fork.id)
    return len(own)
