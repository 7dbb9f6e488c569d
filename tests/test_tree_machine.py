"""The story tree's invariants, property-tested.

A Hypothesis state machine drives random sequences of play / retry / undo / redo / choose
and step takes / edit narration / edit action / fork / switch line / rename line / delete
line / save / restore / delete Save Point / a second writer while busy — against the real
store through `service.tree_ops`, with a plain in-memory model of the tree beside it. After
every step it checks:

- the transcript is the path root → head, and the store's head is the model's;
- the state read is the head node's snapshot (every node gets a distinct one here);
- no node ever disappears except by an explicit line delete, and nothing else appears;
- Redo follows the model's active child, so Redo after Undo returns to the same node
  with the same state;
- a Save Point always restores the exact node it named;
- refused operations change nothing;
- every node carries its redo chain's label (`story/chains`): a node its parent's Redo
  follows has its parent's label, any other starts a chain with a label of its own;
- the lines listed from what the tree keeps (line ends, children counts, chains:
  `branches.list_lines`) are, field for field, those worked out from the whole tree
  (`list_lines_slow`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, tree_ops, unit_of_work
from talekeeper.service.app import Talekeeper
from talekeeper.service.locks import AdventureBusy
from talekeeper.service.turn_events import Done
from talekeeper.service.turns import TurnEvent, collect_turn
from talekeeper.store.models import Node, SavePoint
from talekeeper.story import branches, tree
from talekeeper.views.story import Turn, TurnResult

pick = st.integers(min_value=0, max_value=10_000)
KINDS = st.sampled_from(["do", "say", "story", "continue"])
WORDS = st.sampled_from(["look", "run", "hello", "the tide turns"])


def stamped_append(original):
    """Stand in for the state engine: each node's snapshot is the story that led to it."""

    def append(session, adventure, parent, turn):
        trail = (parent.state or {}).get("trail", [])
        stamped = tree.NewTurn(**{**turn.__dict__, "state": {"trail": [*trail, turn.narration]}})
        return original(session, adventure, parent, stamped)

    return append


async def finish(events: AsyncIterator[TurnEvent]) -> TurnResult:
    async for event in events:
        if isinstance(event, Done):
            return event.result
        assert event.kind != "error", event.data
    raise AssertionError("no done event")


class TreeModel:
    """The tree as plain dicts: what the store must agree with."""

    def __init__(self, root: int, root_state):
        self.parent: dict[int, int | None] = {root: None}
        self.action: dict[int, tuple[str, str]] = {root: ("opening", "")}
        self.take_of: dict[int, int | None] = {root: None}
        self.state: dict[int, object] = {root: root_state}
        self.active: dict[int, int | None] = {root: None}
        self.name: dict[int, str | None] = {root: None}
        self.root = self.head = root
        self.saves: dict[int, int] = {}

    def children(self, node: int) -> list[int]:
        return sorted(n for n, p in self.parent.items() if p == node)

    def path(self, node: int | None = None) -> list[int]:
        node = self.head if node is None else node
        out: list[int] = []
        while node is not None:
            out.append(node)
            node = self.parent[node]
        return out[::-1]

    def family(self, node: int) -> list[int]:
        """The takes of `node`'s turn: a retry or an edit joins the turn it retells; a turn
        whose original is gone, one with the same action as an earlier sibling; a new action
        is a family of its own."""
        parent = self.parent[node]
        if parent is None:
            return [node]
        root: dict[int, int] = {}
        first: dict[tuple[str, str], int] = {}
        for k in self.children(parent):
            of = self.take_of[k]
            root[k] = root[of] if of in root else first.get(self.action[k], k)
            first.setdefault(self.action[k], root[k])
        return [k for k in root if root[k] == root[node]]

    def leaves(self) -> list[int]:
        """The lines: leaves, less the bare takes of a turn read through its `‹ i/n ›`: of
        one turn's takes, only the one read (else Redo's, else the newest) ends a line, and
        none does if one of them goes on — unless saved or named."""

        def is_line_end(leaf: int) -> bool:
            if leaf in (self.root, self.head) or leaf in self.saves.values() or self.name[leaf]:
                return True
            parent = self.parent[leaf]
            same = self.family(leaf)
            if any(self.children(k) for k in same):
                return False
            for rep in (self.head, self.active[parent]):
                if rep in same:
                    return leaf == rep
            return leaf == max(same)

        return sorted(n for n in self.parent if not self.children(n) and is_line_end(n))

    def add(
        self,
        node: int,
        parent: int,
        action: tuple[str, str],
        narration: str,
        take_of: int | None = None,
    ) -> None:
        trail = self.state[parent].get("trail", []) if isinstance(self.state[parent], dict) else []
        extends = self.active[parent] is None
        self.parent[node], self.action[node], self.active[node] = parent, action, None
        self.take_of[node] = take_of
        self.state[node] = {"trail": [*trail, narration]}
        self.name[node] = None
        if extends and self.name[parent]:
            self.name[node], self.name[parent] = self.name[parent], None
        self.active[parent] = node
        self.head = node

    def own_turns(self, leaf: int) -> list[int]:
        """The turns only `leaf`'s line has, last first (empty: the only line); a bare take
        that is no line is just itself."""
        lines = self.leaves()
        if leaf not in lines:
            return [leaf]

        def count(node: int) -> int:
            return sum(1 for end in lines if node in self.path(end))

        own, node = [], leaf
        while self.parent[node] is not None and count(node) <= 1:
            own.append(node)
            if count(self.parent[node]) > 1:
                return own
            node = self.parent[node]
        return []

    def hanging(self, own: list[int]) -> list[int]:
        """The bare takes below a line's own turns, and the other takes (no line of their
        own) of its first own turn: deleting the line takes them too."""
        below = [k for n in own for k in self.children(n) if k not in own]
        if not own or own[0] not in self.leaves():
            return below  # a bare take that is no line: just itself
        top, lines = own[-1], set(self.leaves())
        beside = [
            k
            for k in self.children(self.parent[top])
            if k != top and not self.children(k) and k not in lines and k in self.family(top)
        ]
        return below + beside


class TreeMachine(RuleBasedStateMachine):
    tk: Talekeeper  # set by the test

    def __init__(self) -> None:
        super().__init__()
        with self.tk.db.session() as session:
            adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
            self.aid = adventure.id
            root = tree.head(session, adventure)
            self.model = TreeModel(root.id, root.state)
        self.all_ever: set[int] = {self.model.root}

    # --- helpers ------------------------------------------------------------------------

    def snapshot(self) -> tuple:
        """Everything a refused operation must leave alone."""
        with self.tk.db.session() as session:
            adventure = unit_of_work.get_adventure(session, self.aid)
            rows = session.execute(
                select(
                    Node.id,
                    Node.parent_id,
                    Node.active_child_id,
                    Node.branch_name,
                    Node.narration,
                    Node.chain,
                )
                .where(Node.adventure_id == self.aid)
                .order_by(Node.id)
            ).all()
            saves = session.execute(
                select(SavePoint.id, SavePoint.node_id, SavePoint.name).where(
                    SavePoint.adventure_id == self.aid
                )
            ).all()
            return adventure.head_node_id, tuple(map(tuple, rows)), tuple(map(tuple, saves))

    def refused(self, call, *errors: type[Exception]) -> None:
        before = self.snapshot()
        with pytest.raises(errors or (tree.TreeError,)):
            call()
        assert self.snapshot() == before

    def new_take(self, of: int, action: tuple[str, str], turn: Turn) -> None:
        assert turn.id not in self.all_ever
        self.all_ever.add(turn.id)
        self.model.add(turn.id, self.model.parent[of], action, turn.narration, take_of=of)

    def path_turn(self, i: int) -> int | None:
        path = self.model.path()[1:]
        return path[i % len(path)] if path else None

    # --- rules --------------------------------------------------------------------------

    @rule(kind=KINDS, text=WORDS)
    def play(self, kind: str, text: str) -> None:
        text = "" if kind == "continue" else text
        data = asyncio.run(collect_turn(self.tk, self.aid, kind, text))
        node = data.turn.id
        assert node not in self.all_ever
        self.all_ever.add(node)
        self.model.add(node, self.model.head, (kind, text), data.turn.narration)

    @rule()
    def retry(self) -> None:
        head = self.model.head
        if head == self.model.root:
            self.refused(lambda: tree_ops.retry(self.tk, self.aid))
            return
        data = asyncio.run(finish(tree_ops.retry(self.tk, self.aid)))
        self.new_take(head, self.model.action[head], data.turn)

    @rule()
    def undo(self) -> None:
        head = self.model.head
        if head == self.model.root:
            self.refused(lambda: tree_ops.undo(self.tk, self.aid))
            return
        view = tree_ops.undo(self.tk, self.aid)
        self.model.active[self.model.parent[head]] = head
        self.model.head = self.model.parent[head]
        assert view.head_id == self.model.head and view.can_redo

    @rule()
    def redo(self) -> None:
        ahead = self.model.active[self.model.head]
        if ahead is None:
            self.refused(lambda: tree_ops.redo(self.tk, self.aid))
            return
        assert tree_ops.redo(self.tk, self.aid).head_id == ahead
        self.model.head = ahead

    @precondition(lambda self: self.model.head != self.model.root)
    @rule()
    def undo_then_redo_returns_to_the_same_node(self) -> None:
        head, state = self.model.head, tree_ops.current_state(self.tk, self.aid)
        tree_ops.undo(self.tk, self.aid)
        view = tree_ops.redo(self.tk, self.aid)
        assert view.head_id == head
        assert tree_ops.current_state(self.tk, self.aid) == state
        self.model.active[self.model.parent[head]] = head

    @rule(i=pick, j=pick)
    def choose_take(self, i: int, j: int) -> None:
        turn = self.path_turn(i)
        if turn is None:
            return
        siblings = self.model.children(self.model.parent[turn])
        take = siblings[j % len(siblings)]
        assert tree_ops.choose_take(self.tk, self.aid, take).head_id == take
        self.model.active[self.model.parent[take]] = take
        self.model.head = take

    @rule(by=st.sampled_from([-1, 1]))
    def step_take(self, by: int) -> None:
        head = self.model.head
        siblings = self.model.family(head)
        target = siblings.index(head) + by
        if not 0 <= target < len(siblings):
            self.refused(lambda: tree_ops.step_take(self.tk, self.aid, head, by))
            return
        tree_ops.step_take(self.tk, self.aid, head, by)
        self.model.active[self.model.parent[head]] = siblings[target]
        self.model.head = siblings[target]

    @rule(i=pick, text=WORDS)
    def edit_narration(self, i: int, text: str) -> None:
        turn = self.path_turn(i)
        if turn is None:  # the opening: rewritten in place until a turn follows it, then refused
            if self.model.children(self.model.root):
                self.refused(
                    lambda: tree_ops.edit_narration(self.tk, self.aid, self.model.root, text)
                )
            else:
                nodes_before = self.snapshot()[1]
                view = tree_ops.edit_narration(
                    self.tk, self.aid, self.model.root, f"Opening: {text}"
                )
                assert view.turns_shown[0].narration == f"Opening: {text}"
                assert [row[:4] for row in self.snapshot()[1]] == [row[:4] for row in nodes_before]
            return
        view = tree_ops.edit_narration(self.tk, self.aid, turn, f"Edited: {text}")
        self.new_take(turn, self.model.action[turn], view.turns_shown[-1])

    @rule(i=pick, kind=KINDS, text=WORDS)
    def edit_action(self, i: int, kind: str, text: str) -> None:
        turn = self.path_turn(i)
        if turn is None:
            return
        text = "" if kind == "continue" else text
        data = asyncio.run(finish(tree_ops.edit_action(self.tk, self.aid, turn, kind, text)))
        self.new_take(turn, (kind, text), data.turn)

    @rule(i=pick)
    def switch_line(self, i: int) -> None:
        leaves = self.model.leaves()
        leaf = leaves[i % len(leaves)]
        assert tree_ops.switch_line(self.tk, self.aid, leaf).head_id == leaf
        self.model.head = leaf

    @rule(i=pick, name=st.sampled_from(["North", "South", ""]))
    def rename_line(self, i: int, name: str) -> None:
        leaves = self.model.leaves()
        leaf = leaves[i % len(leaves)]
        tree_ops.rename_line(self.tk, self.aid, leaf, name)
        self.model.name[leaf] = name or None

    @rule(i=pick)
    def delete_line(self, i: int) -> None:
        leaves = self.model.leaves()
        leaf = leaves[i % len(leaves)]
        own = self.model.own_turns(leaf)
        gone = own + self.model.hanging(own)
        holds_head = self.model.head in self.model.path(leaf)
        holds_save = any(node in own for node in self.model.saves.values())
        if holds_head or not own or holds_save:
            self.refused(lambda: tree_ops.delete_line(self.tk, self.aid, leaf))
            return
        assert tree_ops.delete_line(self.tk, self.aid, leaf).deleted_turns == len(gone)
        fork = self.model.parent[own[-1]]
        for node in gone:
            for table in (
                self.model.parent,
                self.model.action,
                self.model.take_of,
                self.model.state,
                self.model.active,
                self.model.name,
            ):
                del table[node]
        if self.model.active[fork] in gone:
            self.model.active[fork] = max(self.model.children(fork))
        self.all_ever -= set(gone)

    @rule(name=WORDS)
    def save(self, name: str) -> None:
        sp = tree_ops.create_save_point(self.tk, self.aid, name)
        assert sp.node_id == self.model.head and sp.at_head
        self.model.saves[sp.id] = self.model.head

    @precondition(lambda self: self.model.saves)
    @rule(i=pick)
    def restore(self, i: int) -> None:
        sid = sorted(self.model.saves)[i % len(self.model.saves)]
        assert tree_ops.restore_save_point(self.tk, self.aid, sid).head_id == self.model.saves[sid]
        self.model.head = self.model.saves[sid]

    @precondition(lambda self: self.model.saves)
    @rule(i=pick)
    def delete_save_point(self, i: int) -> None:
        sid = sorted(self.model.saves)[i % len(self.model.saves)]
        tree_ops.delete_save_point(self.tk, self.aid, sid)
        del self.model.saves[sid]

    @rule(i=pick)
    def a_second_writer_is_refused(self, i: int) -> None:
        head = self.model.head
        writers = [
            lambda: tree_ops.undo(self.tk, self.aid),
            lambda: tree_ops.redo(self.tk, self.aid),
            lambda: asyncio.run(collect_turn(self.tk, self.aid, "do", "barge in")),
            lambda: asyncio.run(finish(tree_ops.retry(self.tk, self.aid))),
            lambda: tree_ops.choose_take(self.tk, self.aid, head),
            lambda: tree_ops.create_save_point(self.tk, self.aid, "busy"),
            lambda: tree_ops.switch_line(self.tk, self.aid, self.model.leaves()[0]),
            lambda: tree_ops.edit_narration(self.tk, self.aid, head, "busy"),
        ]
        self.tk.locks.acquire(self.aid)
        try:
            self.refused(writers[i % len(writers)], AdventureBusy, tree.TreeError)
        finally:
            self.tk.locks.release(self.aid)

    @rule()
    def delete_the_line_being_read(self) -> None:
        """Always refused: the head is on it (at its end, or anywhere before)."""
        leaf = self.model.head
        while self.model.active[leaf] is not None:
            leaf = self.model.active[leaf]
        self.refused(lambda: tree_ops.delete_line(self.tk, self.aid, leaf))

    # --- invariants (one check, one read of the store) -----------------------------------

    @invariant()
    def the_store_agrees_with_the_model(self) -> None:
        m, path = self.model, self.model.path()
        with self.tk.db.session() as session:
            adventure = unit_of_work.get_adventure(session, self.aid)
            head = tree.head(session, adventure)
            # The store's head is the model's, and the transcript is the path root → head.
            assert adventure.head_node_id == m.head
            assert tree.path_ids(session, head) == path
            view = adventures.story_view(session, adventure, limit=len(path))
            # The state read is the head node's own snapshot.
            assert head.state == m.state[m.head]
            rows = session.execute(
                select(
                    Node.id, Node.parent_id, Node.active_child_id, Node.branch_name, Node.chain
                ).where(Node.adventure_id == self.aid)
            ).all()
            saves = dict(
                session.execute(
                    select(SavePoint.id, SavePoint.node_id).where(
                        SavePoint.adventure_id == self.aid
                    )
                ).all()
            )
        assert [t.id for t in view.turns_shown] == path
        assert view.can_undo == (m.head != m.root)
        assert view.can_redo == (m.active[m.head] is not None)
        # No node appears or disappears except as the model says (only a line delete removes).
        assert {r.id for r in rows} == set(m.parent) == self.all_ever
        for r in rows:
            assert r.parent_id == m.parent[r.id]
            assert r.active_child_id == m.active[r.id]  # what Redo follows
            assert r.branch_name == m.name[r.id]
        # Every Save Point still names the node it was made at.
        assert saves == m.saves
        # Redo chains: a node Redo reaches from its parent shares its parent's label; every
        # other node starts a chain, each with a label no other chain has.
        chain = {r.id: r.chain for r in rows}
        tops = [r.id for r in rows if r.parent_id is None or m.active[r.parent_id] != r.id]
        assert None not in chain.values()
        assert len({chain[t] for t in tops}) == len(tops)
        for r in rows:
            if r.id not in tops:
                assert r.chain == chain[r.parent_id]

    @invariant()
    def lines_and_save_points_list_as_the_model_says(self) -> None:
        m = self.model
        with self.tk.db.session() as session:  # what the tree keeps lists the same lines
            adventure = unit_of_work.get_adventure(session, self.aid)
            fast = branches.list_lines(session, adventure)
            assert fast == branches.list_lines_slow(session, adventure)
        lines = tree_ops.list_lines(self.tk, self.aid).lines
        assert [line.id for line in lines] == m.leaves()
        for line in lines:
            assert line.length == len(m.path(line.id)) - 1
            assert line.has_head == (m.head in m.path(line.id))
            own = m.own_turns(line.id)
            assert line.own_turns == len(own + m.hanging(own))
        listed = tree_ops.list_save_points(self.tk, self.aid).save_points
        assert [sp.id for sp in listed] == sorted(m.saves, reverse=True)  # newest first
        reachable, node = set(m.path()), m.active[m.head]
        while node is not None:  # ahead by Redo
            reachable.add(node)
            node = m.active[node]
        for sp in listed:
            assert sp.on_line == (sp.node_id in reachable)


def test_the_tree_keeps_its_invariants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = itertools.count(1)
    provider = ScriptedProvider(lambda request: f"Narration {next(counter)}.", chunk_size=50)
    monkeypatch.setattr(tree, "append_child", stamped_append(tree.append_child))
    tk = Talekeeper(tmp_path / "machine", provider_override=provider)
    TreeMachine.tk = tk
    try:
        run_state_machine_as_test(
            TreeMachine,
            settings=settings(
                max_examples=80,
                stateful_step_count=25,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )
    finally:
        tk.db.dispose()
