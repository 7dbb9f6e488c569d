"""Per-turn reads that do not grow with the story: the kept BM25 index, the kept path."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, update

from talekeeper.memory import bank, lexical, recall
from talekeeper.service import adventures, unit_of_work
from talekeeper.service.app import Talekeeper
from talekeeper.store.models import Adventure, Memory, Node
from talekeeper.story import paths, tree

WORDS = ["boat", "maren", "lantern", "key", "chapel", "bell", "storm", "tobin", "ferry", "stone"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 12), texts), max_size=25),
    st.lists(st.integers(0, 12), max_size=6),
    texts,
)
def test_an_index_kept_by_puts_and_removes_scores_like_one_built_fresh(
    puts, removes, query
) -> None:
    kept, final = lexical.Index(), {}
    for doc_id, text in puts:
        kept.put(doc_id, text)
        final[doc_id] = text
    for doc_id in removes:
        kept.remove(doc_id)
        final.pop(doc_id, None)
    fresh = lexical.Index()
    for doc_id, text in final.items():
        fresh.put(doc_id, text)
    a, b = kept.scores(query), fresh.scores(query)
    assert a.keys() == b.keys() and all(math.isclose(a[k], b[k]) for k in a)
    among = set(list(final)[::2])
    assert set(kept.scores(query, among)) <= among


def test_bm25_prefers_the_rarer_shared_word() -> None:
    docs = ["maren rows the boat", "the boat is old", "the boat leaks", "tobin forges a key"]
    scores = lexical.rank("maren boat", docs)
    assert scores.index(max(scores)) == 0 and scores[3] == 0.0


def _story(tmp_path, turns: int) -> tuple[Talekeeper, int, list[int]]:
    tk = Talekeeper(tmp_path / "home")
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        node = tree.head(session, adventure)
        for n in range(turns):
            node = tree.append_child(
                session, adventure, node, tree.NewTurn("do", f"step {n}", f"You walk {n}.")
            )
        return tk, adventure.id, list(paths.full_path(session, node.id))


def test_the_kept_path_matches_the_tree_after_forks_and_reused_ids(tmp_path) -> None:
    tk, aid, path = _story(tmp_path, 6)
    with tk.db.session() as session:
        adventure = unit_of_work.get_adventure(session, aid)
        assert path == tree.path_ids(session, session.get(Node, path[-1]))
        # A fork below turn 3: its path shares the first four nodes.
        fork = tree.append_child(
            session,
            adventure,
            session.get(Node, path[3]),
            tree.NewTurn("do", "other", "Elsewhere."),
        )
        assert paths.full_path(session, fork.id) == (*path[:4], fork.id)
        fork_id = fork.id
        # The fork is deleted and its id reused by a node elsewhere: the kept path is not.
        session.delete(fork)
        session.flush()
        again = tree.append_child(
            session, adventure, session.get(Node, path[1]), tree.NewTurn("do", "x", "Y.")
        )
        if again.id == fork_id:
            assert paths.full_path(session, again.id) == (*path[:2], again.id)
        assert paths.full_path(session, again.id) == tuple(tree.path_ids(session, again))


def test_the_kept_index_follows_new_edited_and_forgotten_memories(tmp_path) -> None:
    tk, aid, path = _story(tmp_path, 12)
    with tk.db.session() as session:
        block = bank.Block(1, 6, path[6])
        first = bank.add_memory(session, aid, block, "Maren rowed the boat to the chapel.")
        ranked, considered = bank.lexical_on_path(session, aid, path, "the boat")
        assert considered == 1 and [c.id for c, _ in ranked] == [first.id]
        second = bank.add_memory(
            session, aid, bank.Block(7, 12, path[12]), "Tobin hid the key in the bell."
        )
        session.flush()
        ranked, _ = bank.lexical_on_path(session, aid, path, "the key")
        assert [c.id for c, _ in ranked] == [second.id]
        # An edit changes what is found; forgetting removes it.
        session.execute(
            update(Memory).where(Memory.id == first.id).values(text="A storm broke the lantern.")
        )
        assert bank.lexical_on_path(session, aid, path, "the boat")[0] == []
        assert [c.id for c, _ in bank.lexical_on_path(session, aid, path, "storm")[0]] == [first.id]
        session.execute(update(Memory).where(Memory.id == second.id).values(status="forgotten"))
        assert bank.lexical_on_path(session, aid, path, "the key") == ([], 1)
        # Off the path (a memory of a node the head does not descend from): not considered.
        assert bank.lexical_on_path(session, aid, path[:5], "storm") == ([], 0)
    # A fresh process (an empty cache) reads the same.
    recall._cache.clear()
    with tk.db.session() as session:
        assert [c.id for c, _ in bank.lexical_on_path(session, aid, path, "storm")[0]] == [first.id]


looks = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(0, 99), st.integers(1, 8), texts),
        st.tuples(st.just("remember"), st.integers(0, 99), st.booleans(), texts),
        st.tuples(
            st.just("edit"),
            st.integers(0, 99),
            st.sampled_from(["active", "forgotten", "pin", "unpin"]),
            texts,
        ),
        st.tuples(st.just("look"), st.integers(0, 99), st.booleans(), texts),
    ),
    max_size=30,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(looks)
def test_the_kept_pools_rank_as_every_memory_on_the_path_read_afresh(tk: Talekeeper, steps) -> None:
    """Retrieval counts the memories on a path as rows and heads change (recall.Pool)
    instead of looking at every active memory each turn: what it finds, with what score,
    is what BM25 over the path's active memories read afresh finds."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        aid, nodes, memories = adventure.id, [tree.head(session, adventure).id], []
    for kind, pick, flag, text in steps:
        with tk.db.session() as session:
            near = nodes[-1 - pick % min(3, len(nodes))]  # (half the time, one of the newest)
            node = session.get(Node, near if pick < 50 else nodes[pick % len(nodes)])
            if kind == "grow":
                adventure = session.get(Adventure, aid)
                for n in range(flag):
                    node = tree.append_child(
                        session, adventure, node, tree.NewTurn("do", text, f"{n}.")
                    )
                    nodes.append(node.id)
            elif kind == "remember":
                row = Memory(
                    adventure_id=aid,
                    node_id=node.id,
                    first_depth=node.depth,
                    depth=node.depth,
                    text=text,
                    source="auto",
                    pinned=flag,
                    status="active",
                    uses=0,
                )
                session.add(row)
                session.flush()
                memories.append(row.id)
            elif kind == "edit" and memories:
                chosen = update(Memory).where(Memory.id == memories[pick % len(memories)])
                if flag in ("pin", "unpin"):  # the same words: only what it is changes
                    session.execute(chosen.values(pinned=flag == "pin"))
                else:
                    session.execute(chosen.values(status=flag, text=text))
            elif kind == "look":
                path = paths.full_path(session, node.id)
                if flag:  # (a step from the parent's kept pool, as a turn makes)
                    bank.lexical_on_path(session, aid, path[:-1], text)
                found, considered = bank.lexical_on_path(session, aid, path, text)
                rows = [
                    m
                    for m in session.scalars(
                        select(Memory).where(Memory.adventure_id == aid, Memory.status == "active")
                    )
                    if m.depth < len(path) and path[m.depth] == m.node_id
                ]
                fresh = lexical.Index()
                for m in rows:
                    fresh.put(m.id, m.text)
                scores = fresh.scores(text)
                expected = {m.id: scores.get(m.id, 0.0) for m in rows if m.pinned or m.id in scores}
                assert considered == len(rows)
                assert {c.id for c, _ in found} == set(expected)
                assert all(math.isclose(s, expected[c.id]) for c, s in found)
                assert {c.id for c, _ in found if c.pinned} == {m.id for m in rows if m.pinned}
