"""Opening the database: one SQLite file, WAL mode, migrations applied at start."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.script.revision import RevisionError
from alembic.util import CommandError
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

MIGRATIONS = Path(__file__).parent / "migrations"
DB_FILENAME = "talekeeper.db"


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # FULL: a turn the player saw saved survives a power cut too, not only a crash;
    # the price is one fsync per commit, small beside a turn's generation.
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def make_engine(path: Path) -> Engine:
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False})
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


class MigrationFailed(RuntimeError):
    """The database could not be brought up to this version's schema; it was left as it was."""


def migrate(engine: Engine, script_location: Path = MIGRATIONS) -> None:
    """Bring the schema up to the newest revision; never recreates the database.

    All or nothing. The whole upgrade runs in one SQLite transaction on a connection of
    its own: pysqlite's transaction handling is switched off there because it would run
    each DDL statement outside any transaction, and foreign keys are off because SQLite
    drops a rebuilt table (Alembic's batch mode) with an implicit DELETE that would
    cascade into every row pointing at it (rebuilding `adventures` would delete every
    node). A foreign-key check runs before the commit instead. If anything fails, the
    transaction rolls back and the file is exactly as it was. Before an existing database
    is upgraded, a copy is kept beside it (`talekeeper.db.rev-0001.bak`).
    """
    config = Config()
    config.set_main_option("script_location", str(script_location))
    script = ScriptDirectory.from_config(config)
    head = script.get_current_head()
    with engine.connect() as connection:
        current = MigrationContext.configure(connection).get_current_revision()
    if current == head:
        return
    if current is not None:
        try:
            script.get_revision(current)
        except (CommandError, RevisionError) as exc:
            raise MigrationFailed(
                f"This database was written by a newer version of talekeeper (schema "
                f"revision {current}; this version knows up to {head}). Upgrade talekeeper "
                "to open it; the database was not touched."
            ) from exc
        _backup(engine, current)

    upgrader = create_engine(engine.url, poolclass=NullPool)
    event.listen(upgrader, "connect", _migration_pragmas)
    event.listen(upgrader, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
    try:
        with upgrader.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise MigrationFailed(f"the upgrade would leave rows pointing at nothing: {broken[:5]}")
    except Exception as exc:
        raise MigrationFailed(
            f"Upgrading the database from schema {current or '(empty)'} to {head} failed: "
            f"{exc}. The upgrade was rolled back, so nothing was changed; talekeeper will not "
            "start on a half-upgraded database."
        ) from exc
    finally:
        upgrader.dispose()


def _migration_pragmas(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # we send BEGIN ourselves (see migrate)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=OFF")  # a no-op inside a transaction: set it first
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def _backup(engine: Engine, revision: str) -> Path | None:
    """Copy the database (consistently, through SQLite's backup API) before upgrading it."""
    database = engine.url.database
    if not database or database == ":memory:":
        return None
    target = Path(f"{database}.rev-{revision}.bak")
    source = sqlite3.connect(database)
    try:
        copy = sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            copy.close()
    finally:
        source.close()
    return target


class Database:
    """The app's handle on its SQLite file."""

    def __init__(self, path: Path):
        self.path = path
        self.engine = make_engine(path)
        migrate(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @classmethod
    def in_directory(cls, data_dir: Path) -> Database:
        return cls(data_dir / DB_FILENAME)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A unit of work: commits on success, rolls back everything on any error."""
        with self._sessions() as session, session.begin():
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
