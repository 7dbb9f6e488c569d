"""The memory bank's marks (`memory/due.py`): the blocks a run finds due from the marks left
before it are the blocks a full check of every end on the path finds, for any tree, any
head, any memories written meanwhile (the player's own among them) and lines deleted."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from talekeeper.context.settings import ContextSettings
from talekeeper.memory import bank, due
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Adventure, Memory, MemoryMark, Node
from talekeeper.story import tree

SCHEDULES = [ContextSettings(memory_every=2, memory_start=4), ContextSettings()]


def full_check(session, adventure_id: int, path, schedule: ContextSettings) -> list[int]:  # type: ignore[no-untyped-def]
    """Every block end on the path asked about: what the marks spare."""
    have = set(
        session.scalars(
            select(Memory.node_id).where(
                Memory.adventure_id == adventure_id, Memory.source != bank.HAND
            )
        )
    )
    return [e for e in due.block_ends(len(path) - 1, schedule) if path[e] not in have]


def check(session, adventure_id: int, node_id: int, schedule, limit: int | None) -> None:  # type: ignore[no-untyped-def]
    path = bank.path_ids(session, node_id)
    found = [b.depth for b in due.due_blocks(session, adventure_id, path, schedule, limit)]
    assert found == full_check(session, adventure_id, path, schedule)[:limit]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(0, 99), st.integers(1, 16)),
        st.tuples(st.just("remember"), st.integers(0, 99), st.sampled_from(["auto", "hand"])),
        st.tuples(st.just("run"), st.integers(0, 99), st.sampled_from([None, 1, 4])),
        st.tuples(st.just("delete"), st.integers(0, 99), st.just(0)),
    ),
    max_size=25,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps, st.sampled_from(SCHEDULES), st.sampled_from([2, 8]))
def test_the_blocks_found_from_marks_are_those_a_full_check_finds(
    tk: Talekeeper, operations, schedule: ContextSettings, nearest: int
) -> None:
    old, due.NEAREST = due.NEAREST, nearest  # 2: marks found in wider windows, more milestones
    try:
        with tk.db.session() as session:
            adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
            aid, nodes = adventure.id, [tree.head(session, adventure).id]
        for kind, pick, value in operations:
            with tk.db.session() as session:
                node = session.get(Node, nodes[pick % len(nodes)])
                adventure = session.get(Adventure, aid)
                if kind == "grow":
                    for n in range(value):
                        node = tree.append_child(
                            session, adventure, node, tree.NewTurn("do", f"go {n}", f"On {n}.")
                        )
                        nodes.append(node.id)
                elif kind == "remember":
                    session.add(
                        Memory(
                            adventure_id=aid,
                            node_id=node.id,
                            first_depth=max(0, node.depth - 1),
                            depth=node.depth,
                            text="m",
                            source=value,
                            pinned=False,
                            status="active",
                            uses=0,
                        )
                    )
                elif kind == "delete":  # a leaf, not the head: its memories and marks go too
                    leaf = session.scalar(select(Node.id).where(Node.parent_id == node.id))
                    if leaf is None and node.parent_id is not None:
                        if adventure.head_node_id == node.id:
                            adventure.head_node_id = node.parent_id
                            session.flush()
                        nodes.remove(node.id)
                        session.delete(node)
                else:
                    check(session, aid, node.id, schedule, value)
        with tk.db.session() as session:  # then at every node, the newest first, from the marks
            for node_id in [*reversed(nodes), *nodes]:  # left, and again from those left then
                check(session, aid, node_id, schedule, None)
            marked = set(session.scalars(select(MemoryMark.node_id)))
            assert marked <= set(session.scalars(select(Node.id)))  # none outlives its node
    finally:
        due.NEAREST = old


def test_a_mark_another_run_put_meanwhile_is_replaced_not_an_error(tk: Talekeeper) -> None:
    """Two runs may look at the same ends at once (the worker's and another in one process,
    or two processes on one database): a mark the other put between this run's look and its
    write is replaced. Reading which nodes had a mark and then inserting the rest failed
    there on the mark's key (seen in the suite), and the run wrote no memory."""
    from sqlalchemy import event

    schedule = SCHEDULES[0]
    with tk.db.session() as session:
        if session.get_bind().dialect.name == "postgresql":  # the sneak would wait on the lock
            pytest.skip("PostgreSQL: the bank's advisory lock serialises the runs' writes")
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        aid, node = adventure.id, tree.head(session, adventure).id
    sneaked: list[bool] = []

    def sneak() -> None:  # the other run's mark, committed meanwhile
        sneaked.append(True)
        with tk.db.session() as other:
            due._write_marks(other, aid, schedule, {node: [(2, 2)]})

    def after(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        if not sneaked and statement.lstrip().startswith("SELECT") and "memory_marks" in statement:
            sneak()  # after this run looked

    def before(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        if not sneaked and statement.lstrip().startswith("INSERT") and "memory_marks" in statement:
            sneak()  # before this run writes (and holds the writer's lock)

    event.listen(tk.db.engine, "after_cursor_execute", after)
    event.listen(tk.db.engine, "before_cursor_execute", before)
    try:
        with tk.db.session() as session:
            due._write_marks(session, aid, schedule, {node: []})
    finally:
        event.remove(tk.db.engine, "after_cursor_execute", after)
        event.remove(tk.db.engine, "before_cursor_execute", before)
    assert sneaked
    with tk.db.session() as session:
        assert session.get(MemoryMark, node).gaps == ""  # this run's, the later
