"""The same migrations on PostgreSQL: what test_migrations.py checks on the SQLite file,
checked on a server — an old database keeps every story, a failed upgrade changes nothing,
a newer database is refused — and that several processes starting at once upgrade once.
Also, on both stores: the schema the migrations build is the one the models describe.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.pool import NullPool

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.store import db as store_db
from talekeeper.store import text_index
from talekeeper.store.db import Database, MigrationFailed, migrate
from talekeeper.store.models import Base, Node, SavePoint
from talekeeper.web.app import create_app
from tests import pg
from tests.reliability.invariants import check_database
from tests.reliability.test_migrations import (
    OLD_REVISION,
    STAMP,
    alembic_config,
    lines_listed_from_their_ends,
    packed,
)

HEAD = ScriptDirectory.from_config(alembic_config(store_db.MIGRATIONS)).get_current_head()


@pytest.fixture
def scratch(postgres_database: str | None) -> Iterator[str]:
    """An empty PostgreSQL database of this test's own."""
    server = pg.configured_url()
    if server is None:
        pytest.skip(pg.NEEDS_POSTGRESQL)
    with pg.fresh_database(server, f"{server.database}_migrations") as url:
        yield url


def engine_on(url: str):
    return create_engine(store_db.parse_database_url(url), poolclass=NullPool)


def old_database(url: str) -> list[tuple]:
    """A PostgreSQL database as schema 0001 left it: two adventures, a fork, Save Points."""
    engine = engine_on(url)
    with engine.begin() as connection:
        config = alembic_config(store_db.MIGRATIONS)
        config.attributes["connection"] = connection
        command.upgrade(config, OLD_REVISION)
    nodes = [
        (1, 1, None, 2, 0, "opening", "", "Rain on the river.", {"hp": 10}),
        (2, 1, 1, 4, 1, "do", "light the lamp", "It catches.", {"hp": 10}),
        (3, 1, 2, None, 2, "say", "Hello", "Nobody answers.", {"hp": 9}),
        (4, 1, 2, None, 2, "do", "cross", "The ferry sways.", {"hp": 8}),
        (5, 1, 4, None, 3, "continue", "", "Unreached.", None),
        (6, 2, None, None, 0, "opening", "", "Snow.", {}),
    ]
    with engine.begin() as db:
        db.execute(
            text("INSERT INTO scenarios VALUES ('old-tale', 'Old tale', '', :data, false, :t, :t)"),
            {"data": json.dumps({"opening": "Once."}), "t": STAMP},
        )
        db.execute(
            text(
                "INSERT INTO adventures VALUES (1, 'old-tale', 'The long one', 1, 4, :plot, 2, :t, :t)"
            ),
            {"plot": json.dumps({"plot_essentials": "A lamp."}), "t": STAMP},
        )
        db.execute(
            text(
                "INSERT INTO adventures VALUES (2, NULL, 'Orphaned scenario', 6, 6, '{}', 0, :t, :t)"
            ),
            {"t": STAMP},
        )
        for id_, adv, parent, active, depth, kind, action, narration, state in nodes:
            db.execute(
                text(
                    "INSERT INTO nodes VALUES (:id, :adv, :parent, :active, :depth, :kind, :action, "
                    ":narration, '', :state, :proposal, NULL, 'model-x', :t)"
                ),
                {
                    "id": id_, "adv": adv, "parent": parent, "active": active, "depth": depth,
                    "kind": kind, "action": action, "narration": narration,
                    "state": packed(state) if state is not None else None,
                    "proposal": packed({"raw": "{}"}) if id_ == 4 else None, "t": STAMP,
                },
            )  # fmt: skip
        db.execute(text("UPDATE nodes SET branch_name = 'the quiet line' WHERE id = 3"))
        db.execute(
            text("INSERT INTO save_points VALUES (1, 1, 3, 'Before the ferry', 'note', :t)"),
            {"t": STAMP},
        )
        db.execute(
            text("INSERT INTO save_points VALUES (2, 1, 4, 'On the ferry', '', :t)"), {"t": STAMP}
        )
        db.execute(
            text("INSERT INTO settings VALUES ('model', :v)"),
            {"v": json.dumps({"endpoint": "http://127.0.0.1:11434"})},
        )
        # The app never writes ids itself; an old database's sequences are past its rows.
        for table in ("adventures", "nodes", "save_points"):
            db.execute(
                text(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
                )
            )
    engine.dispose()
    return nodes


def dump(url: str) -> dict:
    """Every table's columns and rows, in a stable order: the whole database, comparably."""
    engine = engine_on(url)
    try:
        with engine.connect() as connection:
            out = {}
            for table in sorted(inspect(connection).get_table_names()):
                columns = [
                    (c["name"], str(c["type"])) for c in inspect(connection).get_columns(table)
                ]
                rows = connection.execute(text(f'SELECT * FROM "{table}" ORDER BY 1')).fetchall()
                out[table] = (columns, [tuple(r) for r in rows])
            return out
    finally:
        engine.dispose()


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_the_migrations_build_the_schema_the_models_describe(
    store: str, tmp_path: Path, postgres_database
) -> None:
    """No drift between models and migrations, on either database: a column, type, index or
    foreign key that one of them lacks would make the two stores (or old and new) differ."""
    if store == "sqlite":
        database = Database(tmp_path / "t.db")
        _assert_no_drift(database)
        return
    server = pg.configured_url()
    if server is None:
        pytest.skip(pg.NEEDS_POSTGRESQL)
    with pg.fresh_database(server, f"{server.database}_drift") as url:
        _assert_no_drift(Database(url))


def _in_models(name: str | None, kind: str, parents: dict) -> bool:
    return name is None or not text_index.made_here(name)


def _assert_no_drift(database: Database) -> None:
    try:
        with database.engine.connect() as connection:
            opts = {"compare_type": True, "include_name": _in_models}
            context = MigrationContext.configure(connection, opts=opts)
            assert compare_metadata(context, Base.metadata) == []
    finally:
        database.dispose()


def test_an_old_postgresql_database_is_upgraded_with_every_story_kept(
    scratch: str, tmp_path: Path
) -> None:
    nodes = old_database(scratch)
    before = dump(scratch)
    tk = Talekeeper(
        tmp_path, provider_override=ScriptedProvider(["The ferry docks."]), database_url=scratch
    )
    after = dump(scratch)
    assert after["alembic_version"][1] == [(HEAD,)]
    for table in ("scenarios", "adventures", "nodes", "save_points", "settings"):
        old_columns, old_rows = before[table]
        _, new_rows = after[table]
        if table == "scenarios":  # the built-in scenarios are installed on start
            new_rows = [r for r in new_rows if r[0] == "old-tale"]
        assert [r[: len(old_columns)] for r in new_rows] == old_rows, table

    lines_listed_from_their_ends(tk)
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
        story = client.get("/api/adventures/1").json()
        assert [t["narration"] for t in story["turns_shown"]] == [
            "Rain on the river.",
            "It catches.",
            "The ferry sways.",
        ]
        assert client.get("/api/adventures/2").json()["turns_shown"][0]["narration"] == "Snow."
        played = client.post("/api/adventures/1/turns", json={"kind": "do", "text": "land"})
        assert played.status_code == 200, played.text
        assert played.json()["turn"]["id"] == 7  # a new row, after the old ones
    with tk.db.session() as session:
        for id_, *_rest, state in nodes:
            assert session.get(Node, id_).state == state
        assert {(s.name, s.node_id) for s in session.query(SavePoint)} == {
            ("Before the ferry", 3),
            ("On the ferry", 4),
        }
    tk.db.dispose()
    check_database(scratch)


FAILING = '''"""A migration that does real damage on PostgreSQL, then fails.

Revision ID: 9999
Revises: {down}
"""

import sqlalchemy as sa
from alembic import op

revision = "9999"
down_revision = "{down}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("doomed", sa.Column("id", sa.Integer(), primary_key=True))
    op.add_column("nodes", sa.Column("doomed", sa.Integer(), nullable=True))
    op.execute("UPDATE nodes SET narration = 'CLOBBERED'")
    op.execute("DELETE FROM save_points")
    op.alter_column("adventures", "title", existing_type=sa.String(200), type_=sa.String(300))
    op.drop_index("ix_nodes_adventure_parent", table_name="nodes")
    raise RuntimeError("deliberate failure half way")
'''


def test_a_failed_migration_leaves_the_postgresql_database_exactly_as_it_was(
    scratch: str, tmp_path: Path
) -> None:
    old_database(scratch)
    Database(scratch).dispose()  # at the current head
    before = dump(scratch)
    scripts = tmp_path / "migrations"
    import shutil

    shutil.copytree(store_db.MIGRATIONS, scripts, ignore=shutil.ignore_patterns("__pycache__"))
    (scripts / "versions" / "9999_extra.py").write_text(FAILING.format(down=HEAD))

    engine = store_db.make_engine(store_db.parse_database_url(scratch))
    with pytest.raises(MigrationFailed) as failed:
        migrate(engine, script_location=scripts)
    engine.dispose()
    message = str(failed.value)
    assert "deliberate failure half way" in message and "nothing was changed" in message.lower()
    assert dump(scratch) == before
    check_database(scratch)


def test_a_postgresql_database_from_a_newer_release_is_refused_plainly(scratch: str) -> None:
    Database(scratch).dispose()
    engine = engine_on(scratch)
    with engine.begin() as db:
        db.execute(text("UPDATE alembic_version SET version_num = 'ffff'"))
    engine.dispose()
    before = dump(scratch)
    with pytest.raises(MigrationFailed) as refused:
        Database(scratch)
    assert "newer version of talekeeper" in str(refused.value)
    assert dump(scratch) == before


def test_processes_starting_at_once_upgrade_the_database_once(scratch: str) -> None:
    """uvicorn --workers N starts N processes on one empty database together: one upgrades
    (under an advisory lock), the others wait, then find the schema current."""
    with ThreadPoolExecutor(4) as pool:
        databases = list(pool.map(lambda _: Database(scratch), range(4)))
    for database in databases:
        database.dispose()
    assert dump(scratch)["alembic_version"][1] == [(HEAD,)]
