"""What the tree keeps on its nodes, against what walking the whole tree finds, after random
sequences of the tree's own operations: the redo chains (story/chains.py: the labels
every change of an active child keeps, and what is read from them — on the path to a turn,
ahead of the head by Redo), and the line ends and children counts (story/line_ends.py:
the lines listed from them, `branches.list_lines`, equal the lines worked out from the
whole tree, `list_lines_slow`); the migrations that work them out for existing stories,
and a bundle import."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, event, select
from sqlalchemy.pool import NullPool

from talekeeper.interop import bundles
from talekeeper.service import adventures
from talekeeper.service.app import Talekeeper
from talekeeper.store.db import MIGRATIONS, _migration_pragmas, migrate
from talekeeper.store.models import Adventure, Node, SavePoint
from talekeeper.story import branches, chains, line_ends, savepoints, takes, tree

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["play", "play", "retry", "undo", "redo", "choose", "jump", "delete", "delete turn"]
            + ["save", "unsave", "name", "edit"]
        ),
        st.integers(0, 1000),
    ),
    max_size=30,
)


def _turn(n: int, state: dict, take_of: int | None = None) -> tree.NewTurn:
    action = "walk" if take_of else f"step {n}"
    return tree.NewTurn("do", action, f"Turn {n}.", state=state, take_of=take_of)


def play(session, adventure: Adventure, ops: list[tuple[str, int]]) -> None:  # noqa: ANN001
    """Apply `ops` with the story layer's own functions (what the services call)."""
    state = tree.head(session, adventure).state
    for n, (op, pick) in enumerate(ops):
        head = tree.head(session, adventure)
        ids = list(session.scalars(select(Node.id).where(Node.adventure_id == adventure.id)))
        any_node = session.get(Node, sorted(ids)[pick % len(ids)])
        if op == "play":
            tree.append_child(session, adventure, head, _turn(n, state))
        elif op == "retry" and head.parent_id is not None:
            parent = tree.parent_for_take(session, head)
            tree.append_child(session, adventure, parent, _turn(n, state, take_of=head.id))
        elif op == "undo" and head.parent_id is not None:
            tree.undo(session, adventure)
        elif op == "redo" and head.active_child_id is not None:
            tree.redo(session, adventure)
        elif op == "choose" and any_node.parent_id is not None:
            takes.choose(session, adventure, any_node)
        elif op == "jump":  # a Save Point's restore, another line read
            tree.move_head(adventure, any_node)
        elif op == "delete" and any_node.active_child_id is None:
            # the line's own turns read from its partings, as the whole-tree walk finds them
            line_ends.settle(session)
            own, _ = branches._own_turns(session, adventure, any_node)
            assert sorted(own) == sorted(
                branches._Skeleton(session, adventure).own_ids(any_node.id)
            )
            try:
                branches.delete_line(session, adventure, any_node)
            except tree.TreeError:
                pass
        elif op == "save":
            savepoints.create(session, adventure, f"save {n}")
        elif op == "unsave":
            saves = list(
                session.scalars(select(SavePoint).where(SavePoint.adventure_id == adventure.id))
            )
            if saves:
                savepoints.delete(session, saves[pick % len(saves)])
        elif op == "name" and any_node.active_child_id is None:
            branches.rename(session, adventure, any_node, "" if pick % 3 == 0 else f"line {n}")
        elif op == "edit" and any_node.parent_id is not None:  # a take of an earlier turn
            parent = tree.parent_for_take(session, any_node)
            again = tree.NewTurn(
                "do", any_node.action_text, "Told again.", state=state, take_of=any_node.id
            )
            tree.append_child(session, adventure, parent, again)
        elif op == "delete turn":
            try:
                branches.delete_turn(session, adventure, any_node)
            except tree.TreeError:
                pass
        session.flush()
        session.expire_all()


def check(session, adventure_id: int) -> int:  # noqa: ANN001
    """The labels are the chains, and what is read from them agrees with walking the tree;
    the children counts are true and the lines listed are the lines worked out from the
    whole tree. Returns how many nodes were checked."""
    adventure = session.get(Adventure, adventure_id)
    assert branches.list_lines(session, adventure) == branches.list_lines_slow(session, adventure)
    rows = session.execute(
        select(
            Node.id, Node.parent_id, Node.active_child_id, Node.chain, Node.depth, Node.child_count
        ).where(Node.adventure_id == adventure_id)
    ).all()
    node = {r.id: r for r in rows}
    for r in rows:
        assert r.child_count == sum(1 for o in rows if o.parent_id == r.id)
    tops = [r.id for r in rows if r.parent_id is None or node[r.parent_id].active_child_id != r.id]
    assert None not in {r.chain for r in rows}
    assert len({node[t].chain for t in tops}) == len(tops)  # a label a chain
    for r in rows:
        if r.id not in tops:
            assert r.chain == node[r.parent_id].chain
    for r in rows:
        path, at = set(), r.id
        while at is not None:
            path.add(at)
            at = node[at].parent_id
        stretches = chains.segments(session, session.get(Node, r.id))
        assert sum(s.last - s.first + 1 for s in stretches) == r.depth + 1
        assert {o.id for o in rows if chains.on_path(stretches, o.chain, o.depth)} == path
        redo, at = set(), r.active_child_id
        while at is not None:
            redo.add(at)
            at = node[at].active_child_id
        head = session.get(Node, r.id)
        assert {o.id for o in rows if chains.ahead(head, o.chain, o.depth)} == redo
        ordered = sorted(path, key=lambda i: node[i].depth)
        low, high = r.depth // 3, max(r.depth // 3, r.depth - 1)
        assert chains.ids_on(session, adventure_id, stretches, low, high) == ordered[low : high + 1]
    return len(rows)


def _story(tk: Talekeeper, ops: list[tuple[str, int]]) -> int:
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        play(session, adventure, ops)
        return adventure.id


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_every_change_of_an_active_child_keeps_the_chains(tmp_path_factory, ops) -> None:  # noqa: ANN001
    tk = Talekeeper(tmp_path_factory.mktemp("chains"))
    try:
        aid = _story(tk, ops)
        with tk.db.session() as session:
            check(session, aid)
    finally:
        tk.db.dispose()


def test_the_migration_labels_the_stories_it_finds(tmp_path: Path) -> None:
    """Stories written before migration 0010 (its column dropped, as a downgrade leaves
    them) get the labels the tree would have given them."""
    tk = Talekeeper(tmp_path / "old")
    ops = [("play", 0)] * 6 + [("undo", 0), ("undo", 0), ("play", 0), ("retry", 0)]
    ops += [("choose", 3), ("play", 0), ("undo", 0), ("jump", 7), ("play", 0), ("undo", 0)]
    ids = [_story(tk, ops), _story(tk, [("play", 0)] * 3 + [("retry", 0), ("choose", 2)])]
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    engine = tk.db.engine
    downgrader = create_engine(engine.url, poolclass=NullPool)
    if engine.dialect.name == "sqlite":  # as `migrate` does: a rebuilt table drops no rows
        event.listen(downgrader, "connect", _migration_pragmas)
        event.listen(downgrader, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))
    with downgrader.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0009")
    downgrader.dispose()
    migrate(engine)
    with tk.db.session() as session:
        assert sum(check(session, aid) for aid in ids) >= 16
    tk.db.dispose()


def test_an_imported_story_is_labelled_as_it_is_written(tk: Talekeeper, tmp_path: Path) -> None:
    aid = _story(tk, [("play", 0)] * 5 + [("undo", 0), ("retry", 0), ("play", 0), ("jump", 2)])
    with tk.db.session() as session:
        savepoints.create(session, session.get(Adventure, aid), "here")
    bundles.export_to(tk, aid, tmp_path / "story.tkb")
    copy = bundles.import_path(tk, tmp_path / "story.tkb").adventure_id
    with tk.db.session() as session:
        assert check(session, copy) == check(session, aid)


def test_deleting_a_line_takes_its_own_turns_and_the_takes_hanging_off_them(
    tk: Talekeeper,
) -> None:
    """The line's own turns are read from where the lines part, not the whole tree: its
    turns below the fork, a bare take hanging off one of them, and a bare take of its first
    turn beside it go; the other line and the fork stay."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        root = tree.head(session, adventure)
        state = root.state
        a1 = tree.append_child(session, adventure, root, _turn(1, state))
        a2 = tree.append_child(session, adventure, a1, _turn(2, state))
        b1 = tree.append_child(session, adventure, a1, _turn(3, state))
        beside = tree.append_child(session, adventure, a1, _turn(4, state, take_of=b1.id))
        takes.choose(session, adventure, b1)
        b2 = tree.append_child(session, adventure, b1, _turn(5, state))
        hanging = tree.append_child(session, adventure, b1, _turn(6, state, take_of=b2.id))
        takes.choose(session, adventure, b2)
        b3 = tree.append_child(session, adventure, b2, _turn(7, state))
        tree.move_head(adventure, a2)
        line_ends.settle(session)
        expected = {b3.id, b2.id, b1.id, hanging.id, beside.id}
        own, top = branches._own_turns(session, adventure, b3)
        assert set(own) == expected and top == b1.id
        assert set(branches._Skeleton(session, adventure).own_ids(b3.id)) == expected
        assert branches.delete_line(session, adventure, b3) == 5
        left = set(session.scalars(select(Node.id).where(Node.adventure_id == adventure.id)))
        assert left == {root.id, a1.id, a2.id}
        assert [line.id for line in branches.list_lines(session, adventure)] == [a2.id]
