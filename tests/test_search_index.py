"""Search through the text index (store/text_index.py) finds exactly what reading every turn
of the path found: random stories with several lines, texts in mixed case with accents,
`%`, `_`, quotes and backslashes, queries cut from them or made up — on SQLite (FTS5
trigram) and PostgreSQL (pg_trgm) alike; with the index narrowing, with the path read
instead (a common word, a short query), and after turns' texts change or are deleted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import or_, select

from talekeeper.service import adventures, search
from talekeeper.service.app import Talekeeper
from talekeeper.service.search import excerpt, search_story
from talekeeper.store.models import Adventure, Node
from talekeeper.story import branches, tree
from talekeeper.story.actions import format_action
from talekeeper.views.story import SearchMatch, SearchResult

ALPHABET = "abcAB éÉßç%_\\\"'.\n"
TEXTS = st.text(alphabet=ALPHABET, min_size=0, max_size=40)


def reference(tk: Talekeeper, aid: int, query: str) -> SearchResult:
    """Search as it was before the index: every turn of the path, matched by LIKE."""
    query = " ".join(query.split())
    with tk.db.session() as session:
        adventure = session.get(Adventure, aid)
        result: dict[str, Any] = {"query": query, "matches": [], "more": False}
        result["title"] = adventure.title
        if not query:
            return SearchResult(**result)
        ids = tree.path_ids(session, tree.head(session, adventure))
        like = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = session.execute(
            select(Node.id, Node.depth, Node.action_kind, Node.action_text, Node.narration).where(
                Node.id.in_(ids),
                or_(
                    Node.narration.ilike(like, escape="\\"),
                    Node.action_text.ilike(like, escape="\\"),
                ),
            )
        ).all()
    rows.sort(key=lambda r: r.depth)
    for row in rows[: search.MAX_MATCHES]:
        line = format_action(row.action_kind, row.action_text)
        hit = excerpt(row.narration, query) or excerpt(line or row.action_text, query)
        result["matches"].append(
            SearchMatch(id=row.id, turn=row.depth, action_line=line, excerpt=hit)
        )
    result["more"] = len(rows) > search.MAX_MATCHES
    return SearchResult(**result)


def build(tk: Talekeeper, texts: list[str], forks: list[int]) -> int:
    """A story of `texts` (narration and action each), going back `forks[i]` turns now and
    then to start another line."""
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        head = tree.head(session, adventure)
        for i, words in enumerate(texts):
            turn = tree.NewTurn("do", words[::-1], f"{words} ({i})", state=head.state)
            head = tree.append_child(session, adventure, head, turn)
            if i < len(forks):
                for _ in range(forks[i] % 3):
                    if head.parent_id is not None:
                        head = tree.undo(session, adventure)
        return adventure.id


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    texts=st.lists(TEXTS, min_size=1, max_size=12),
    forks=st.lists(st.integers(0, 5), max_size=12),
    cut=st.tuples(st.integers(0, 11), st.integers(0, 40), st.integers(1, 8)),
    made_up=TEXTS,
    flip=st.booleans(),
)
def test_the_index_finds_what_reading_every_turn_found(
    tk: Talekeeper, texts, forks, cut, made_up, flip, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    aid = build(tk, texts, forks)
    source = texts[cut[0] % len(texts)]
    query = source[cut[1] : cut[1] + cut[2]]
    query = query.swapcase() if flip else query
    for q in (query, made_up, source):
        assert search_story(tk, aid, q) == reference(tk, aid, q)
    monkeypatch.setattr(search, "CAP", 1)  # a common word: the path is read instead
    monkeypatch.setattr(search, "WINDOW", 2)
    monkeypatch.setattr(search, "MAX_MATCHES", 2)
    for q in (query, made_up):
        assert search_story(tk, aid, q) == reference(tk, aid, q)


def test_a_changed_or_deleted_turn_leaves_the_index(tk: Talekeeper) -> None:
    with tk.db.session() as session:
        adventure = adventures.start_adventure(session, "greywater-lantern", {"name": "Ada"})
        root = tree.head(session, adventure)
        aid = adventure.id
    assert search_story(tk, aid, "gullwing").matches == []  # the opening entered
    with tk.db.session() as session:
        adventure = session.get(Adventure, aid)
        tree.rewrite_opening(session, adventure, tree.head(session, adventure), "A gullwing.")
    assert [m.id for m in search_story(tk, aid, "gullwing").matches] == [root.id]
    with tk.db.session() as session:
        adventure = session.get(Adventure, aid)
        head = tree.head(session, adventure)
        kept = tree.append_child(
            session, adventure, head, tree.NewTurn("do", "a", "Tern.", state=head.state)
        )
        tree.undo(session, adventure)
        gone = tree.append_child(
            session, adventure, head, tree.NewTurn("do", "b", "Ternary.", state=head.state)
        )
        ids = (kept.id, gone.id)
    assert {m.id for m in search_story(tk, aid, "tern").matches} == {ids[1]}
    with tk.db.session() as session:
        adventure = session.get(Adventure, aid)
        branches.switch(session, adventure, session.get(Node, ids[0]))
        branches.delete_line(session, adventure, session.get(Node, ids[1]))
        # (the same text again, where SQLite may give the deleted row's id to a new one)
        head = tree.head(session, adventure)
        tree.append_child(
            session, adventure, head, tree.NewTurn("do", "c", "Ternary.", state=head.state)
        )
    for q in ("tern", "ternary", "gullwing"):
        assert search_story(tk, aid, q) == reference(tk, aid, q)
    assert len(search_story(tk, aid, "tern").matches) == 2


def test_the_index_is_used(tk: Talekeeper, monkeypatch: pytest.MonkeyPatch) -> None:
    """The path is not read for a query the index narrows (if it did, this would fail)."""
    aid = build(tk, ["quayside nets", "grey water"], [])
    monkeypatch.setattr(search.chains, "ids_on", lambda *a, **k: pytest.fail("read the path"))
    assert [m.turn for m in search_story(tk, aid, "Quayside").matches] == [1]


def test_no_index_reads_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database without the index (an SQLite with no trigram tokenizer) still searches."""
    tk = Talekeeper(tmp_path / "plain")
    aid = build(tk, ["quayside nets", "grey water", "the quayside"], [])
    monkeypatch.setattr(search.text_index, "available", lambda session: False)
    assert search_story(tk, aid, "quayside") == reference(tk, aid, "quayside")
    assert len(search_story(tk, aid, "quayside").matches) == 2
    tk.db.dispose()


def test_a_database_that_lost_the_index_triggers_gets_them_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0012 rebuilt `nodes` on SQLite and dropped the triggers that keep the
    index true; 0013 makes them again and has every row entered afresh, so a text changed
    meanwhile is found by its new words, not its old ones."""
    import sqlite3

    from alembic import command
    from sqlalchemy import create_engine

    from talekeeper.store import db as store_db
    from tests.reliability.test_migrations import alembic_config

    monkeypatch.delenv(store_db.DATABASE_URL_ENV, raising=False)
    tk = Talekeeper(tmp_path / "home")
    aid = build(tk, ["quayside nets"], [])
    assert len(search_story(tk, aid, "quayside").matches) == 1  # entered
    path = tk.db.url.database
    tk.db.dispose()
    rewind = create_engine(f"sqlite:///{path}")
    with rewind.begin() as connection:  # the migrations after 0013 undone by their own downgrades
        config = alembic_config(store_db.MIGRATIONS)
        config.attributes["connection"] = connection
        command.downgrade(config, "0013")
    rewind.dispose()
    with sqlite3.connect(path) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'node_words'").fetchall():
            pytest.skip("this SQLite has no trigram tokenizer: no index, nothing to keep")
        triggers = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
        assert {"node_words_gone", "node_words_changed"} <= triggers  # a new database has them
        for name in triggers:
            db.execute(f"DROP TRIGGER {name}")
        db.execute(
            "UPDATE nodes SET narration = 'harbour lamps' WHERE narration LIKE 'quayside nets%'"
        )
        db.execute("UPDATE alembic_version SET version_num = '0012'")
    tk = Talekeeper(tmp_path / "home")  # upgraded at start
    assert search_story(tk, aid, "quayside").matches == []
    assert len(search_story(tk, aid, "harbour").matches) == 1
    with tk.db.session() as session:
        adventure = session.get(Adventure, aid)
        tree.head(session, adventure).narration = "quayside again"
    assert search_story(tk, aid, "harbour").matches == []  # the trigger took the old words out
    assert len(search_story(tk, aid, "quayside").matches) == 1
    tk.db.dispose()


def test_the_turns_waiting_for_the_index_are_read_through_its_own_index(
    tk: Talekeeper,
) -> None:
    """Each search first reads the adventure's turns not yet entered. Left to choose, SQLite
    read them through `ix_nodes_adventure_id` — every turn of the story, 7 ms a search at
    10,000 turns — instead of the partial index that holds only the waiting ones."""
    from talekeeper.store import text_index

    aid = build(tk, [f"turn {n}" for n in range(500)], [])  # SQLite chose wrongly at 500
    with tk.db.session() as session:
        if session.get_bind().dialect.name != "sqlite" or not text_index.available(session):
            pytest.skip("the waiting turns are SQLite's (FTS5 trigram index)")
        for statement in (text_index._WAITING, text_index._WAITING_IDS):
            sql = str(statement.compile(session.get_bind()))
            plan = session.connection().exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", (aid,))
            assert "ix_nodes_waiting" in " ".join(row[-1] for row in plan)
