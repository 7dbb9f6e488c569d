from pathlib import Path

from sqlalchemy import inspect, text

from talekeeper.store.db import Database
from talekeeper.store.models import Node


def test_migrations_create_the_tree_schema(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    tables = set(inspect(db.engine).get_table_names())
    assert {
        "scenarios",
        "adventures",
        "nodes",
        "save_points",
        "settings",
        "alembic_version",
    } <= tables
    columns = {c["name"] for c in inspect(db.engine).get_columns("nodes")}
    assert {"parent_id", "active_child_id", "state", "proposal"} <= columns
    with db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_reopening_applies_no_migration_twice_and_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    db = Database(path)
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO settings(key, value) VALUES ('x', 'kept')"))
    db.dispose()
    again = Database(path)
    with again.engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM settings WHERE key='x'")).scalar() == "kept"
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1


def test_state_snapshots_are_stored_compressed(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    from talekeeper.store.models import Adventure

    big_state = {"entities": [{"name": "Maren", "description": "ferrywoman " * 200}]}
    with db.session() as session:
        adventure = Adventure(title="t", plot={}, turn_count=0)
        session.add(adventure)
        session.flush()
        session.add(
            Node(adventure_id=adventure.id, depth=0, action_kind="opening", state=big_state)
        )
    with db.engine.connect() as conn:
        raw = conn.execute(text("SELECT state FROM nodes")).scalar()
    assert isinstance(raw, bytes) and len(raw) < len(str(big_state)) / 5
    with db.session() as session:
        assert session.query(Node).one().state == big_state


def test_a_failed_unit_of_work_writes_nothing(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    from talekeeper.store.models import Setting

    try:
        with db.session() as session:
            session.add(Setting(key="a", value=1))
            session.flush()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with db.session() as session:
        assert session.get(Setting, "a") is None
