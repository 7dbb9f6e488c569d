"""Migrations are safe: an old database keeps every story; a failed upgrade changes nothing.

The old database is built by the real revision 0001 (migrations are frozen history) and
filled with raw SQL in 0001's own shape, so the test keeps meaning the same thing as the
models move on.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service.app import Talekeeper
from talekeeper.store import db as store_db
from talekeeper.store.db import Database, MigrationFailed, migrate
from talekeeper.store.models import Adventure
from talekeeper.story import branches
from talekeeper.web.app import create_app
from tests.reliability.invariants import check_database

OLD_REVISION = "0001"


@pytest.fixture(autouse=True)
def on_sqlite_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the SQLite file (its copy before an upgrade, its rebuilt
    tables), in either pass; test_migrations_postgres.py holds PostgreSQL's counterparts."""
    monkeypatch.delenv(store_db.DATABASE_URL_ENV, raising=False)


STAMP = "2026-01-02 03:04:05.000000"


def packed(value) -> bytes:
    return zlib.compress(json.dumps(value, separators=(",", ":"), sort_keys=True).encode())


def alembic_config(script_location: Path) -> Config:
    config = Config()
    config.set_main_option("script_location", str(script_location))
    return config


def old_database(path: Path) -> dict:
    """A database as release 0.1 (schema 0001) left it: two adventures, a fork, Save Points."""
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        config = alembic_config(store_db.MIGRATIONS)
        config.attributes["connection"] = connection
        command.upgrade(config, OLD_REVISION)
    engine.dispose()
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO scenarios VALUES ('old-tale','Old tale','', ?, 0, ?, ?)",
            (json.dumps({"opening": "Once."}), STAMP, STAMP),
        )
        db.execute(
            "INSERT INTO adventures VALUES (1,'old-tale','The long one',1,4,?,2,?,?)",
            (json.dumps({"plot_essentials": "A lamp."}), STAMP, STAMP),
        )
        db.execute(
            "INSERT INTO adventures VALUES (2,NULL,'Orphaned scenario',6,6,'{}',0,?,?)",
            (STAMP, STAMP),
        )
        nodes = [
            # id, adventure, parent, active child, depth, kind, action, narration, state
            (1, 1, None, 2, 0, "opening", "", "Rain on the river.", {"hp": 10}),
            (2, 1, 1, 4, 1, "do", "light the lamp", "It catches.", {"hp": 10}),
            (3, 1, 2, None, 2, "say", "Hello", "Nobody answers.", {"hp": 9}),
            (4, 1, 2, None, 2, "do", "cross", "The ferry sways.", {"hp": 8}),
            (5, 1, 4, None, 3, "continue", "", "Unreached.", None),
            (6, 2, None, None, 0, "opening", "", "Snow.", {}),
        ]
        for id_, adv, parent, active, depth, kind, action, narration, state in nodes:
            db.execute(
                "INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,'',?,?,NULL,'model-x',?)",
                (
                    id_,
                    adv,
                    parent,
                    active,
                    depth,
                    kind,
                    action,
                    narration,
                    packed(state) if state is not None else None,
                    packed({"raw": "{}"}) if id_ == 4 else None,
                    STAMP,
                ),
            )
        db.execute("UPDATE nodes SET branch_name='the quiet line' WHERE id=3")
        db.execute("INSERT INTO save_points VALUES (1,1,3,'Before the ferry','note',?)", (STAMP,))
        db.execute("INSERT INTO save_points VALUES (2,1,4,'On the ferry','',?)", (STAMP,))
        db.execute(
            "INSERT INTO settings VALUES ('model', ?)",
            (json.dumps({"endpoint": "http://127.0.0.1:11434"}),),
        )
    return {"nodes": nodes}


def lines_listed_from_their_ends(tk: Talekeeper) -> None:
    """The old database's lines, listed from the line ends migration 0012 worked out, are
    those the whole tree gives."""
    with tk.db.session() as session:
        for aid, ends in ((1, [3, 5]), (2, [6])):
            old = session.get(Adventure, aid)
            listed = branches.list_lines(session, old)
            assert [line.id for line in listed] == ends
            assert listed == branches.list_lines_slow(session, old)


def dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


def rows(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def test_an_old_database_is_upgraded_with_every_story_kept(tmp_path: Path) -> None:
    path = tmp_path / "talekeeper.db"
    made = old_database(path)
    before = {
        table: rows(path, f"SELECT * FROM {table} ORDER BY 1")
        for table in ("scenarios", "adventures", "nodes", "save_points", "settings")
    }

    tk = Talekeeper(tmp_path, provider_override=ScriptedProvider(["The ferry docks."]))
    head = ScriptDirectory.from_config(alembic_config(store_db.MIGRATIONS)).get_current_head()
    assert rows(path, "SELECT version_num FROM alembic_version") == [(head,)]
    # Every row of 0001's tables is still there, column for column (new columns may follow).
    for table, old_rows in before.items():
        new_rows = rows(path, f"SELECT * FROM {table} ORDER BY 1")
        if table == "scenarios":  # the built-in scenarios are installed on start
            new_rows = [r for r in new_rows if r[0] == "old-tale"]
        assert [r[: len(o)] for r, o in zip(new_rows, old_rows, strict=True)] == old_rows, table
    # A copy of the old file was kept beside it before the upgrade.
    backups = list(tmp_path.glob("talekeeper.db.rev-*.bak"))
    assert len(backups) == 1 and OLD_REVISION in backups[0].name
    assert rows(backups[0], "SELECT version_num FROM alembic_version") == [(OLD_REVISION,)]

    lines_listed_from_their_ends(tk)
    # And the app reads and plays it: the story at the head, the snapshots, a new turn.
    with TestClient(create_app(tk), base_url="http://127.0.0.1:8000") as client:
        story = client.get("/api/adventures/1").json()
        assert [t["narration"] for t in story["turns_shown"]] == [
            "Rain on the river.",
            "It catches.",
            "The ferry sways.",
        ]
        assert story["can_redo"] is False and story["can_undo"] is True
        assert client.get("/api/adventures/2").json()["turns_shown"][0]["narration"] == "Snow."
        played = client.post("/api/adventures/1/turns", json={"kind": "do", "text": "land"})
        assert played.status_code == 200, played.text
    from talekeeper.store.models import Node, SavePoint

    with tk.db.session() as session:
        for id_, *_rest, state in made["nodes"]:
            assert session.get(Node, id_).state == state
        assert {(s.name, s.node_id) for s in session.query(SavePoint)} == {
            ("Before the ferry", 3),
            ("On the ferry", 4),
        }
    tk.db.dispose()
    check_database(path)


FAILING = '''"""A migration that does real damage and then fails.

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
    with op.batch_alter_table("adventures", recreate="always") as batch:
        batch.alter_column("title", existing_type=sa.String(200), type_=sa.String(300))
    {tail}
'''


def migrations_with(tmp_path: Path, tail: str) -> Path:
    """The real migrations plus one more revision on top, in a scratch directory."""
    scripts = tmp_path / "migrations"
    shutil.copytree(store_db.MIGRATIONS, scripts, ignore=shutil.ignore_patterns("__pycache__"))
    head = ScriptDirectory.from_config(alembic_config(scripts)).get_current_head()
    (scripts / "versions" / "9999_extra.py").write_text(FAILING.format(down=head, tail=tail))
    return scripts


def test_a_failed_migration_leaves_the_database_exactly_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "talekeeper.db"
    old_database(path)
    Database(path).dispose()  # at the current head
    before = dump(path)
    scripts = migrations_with(tmp_path, 'raise RuntimeError("deliberate failure half way")')

    engine = store_db.make_engine(path)
    with pytest.raises(MigrationFailed) as failed:
        migrate(engine, script_location=scripts)
    engine.dispose()
    message = str(failed.value)
    assert "deliberate failure half way" in message and "nothing was changed" in message.lower()
    assert dump(path) == before
    check_database(path)


def test_a_table_rebuild_does_not_cascade_through_foreign_keys(tmp_path: Path) -> None:
    """SQLite drops a rebuilt table with an implicit DELETE that fires ON DELETE CASCADE:
    rebuilding `adventures` with foreign keys on would delete every node of every story."""
    path = tmp_path / "talekeeper.db"
    old_database(path)
    Database(path).dispose()
    nodes_before = rows(path, "SELECT id, narration FROM nodes ORDER BY id")
    # The same damaging revision, minus its damage and its failure: just the rebuild.
    scripts = migrations_with(tmp_path, "pass")
    text = (scripts / "versions" / "9999_extra.py").read_text()
    for line in (
        "    op.execute(\"UPDATE nodes SET narration = 'CLOBBERED'\")\n",
        '    op.execute("DELETE FROM save_points")\n',
    ):
        text = text.replace(line, "")
    (scripts / "versions" / "9999_extra.py").write_text(text)

    engine = store_db.make_engine(path)
    migrate(engine, script_location=scripts)
    engine.dispose()
    assert rows(path, "SELECT id, narration FROM nodes ORDER BY id") == nodes_before
    assert rows(path, "SELECT count(*) FROM save_points") == [(2,)]
    check_database(path)


def test_a_database_from_a_newer_release_is_refused_plainly(tmp_path: Path) -> None:
    path = tmp_path / "talekeeper.db"
    Database(path).dispose()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE alembic_version SET version_num = 'ffff'")
    before = dump(path)
    with pytest.raises(MigrationFailed) as refused:
        Database(path)
    assert "newer version of talekeeper" in str(refused.value)
    assert dump(path) == before
