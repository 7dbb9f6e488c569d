"""Opening the database, migrations applied at start.

Two stores, one schema and one set of migrations: a SQLite file (the default: WAL mode,
one local player) or a PostgreSQL server named by a URL (`TALEKEEPER_DATABASE_URL`,
`--database-url`), for a host running several app processes on one database.
"""

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
from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from talekeeper.errors import Conflict, Unavailable

MIGRATIONS = Path(__file__).parent / "migrations"
DB_FILENAME = "talekeeper.db"
DATABASE_URL_ENV = "TALEKEEPER_DATABASE_URL"
# Any constant shared by every process: the key of the advisory lock that serialises
# concurrent upgrades of one PostgreSQL database (several app processes starting at once).
_MIGRATION_LOCK_KEY = 0x7461_6C65  # "tale"
# How long a SQLite statement waits for another connection's write lock before giving up.
# A turn commits in milliseconds, but on a loaded machine a large import, a migration's copy
# or a burst of writers just after a restart can hold the file for seconds; past this the
# request is refused plainly (DatabaseBusy, 503), never with a bare "database is locked".
BUSY_TIMEOUT_S = 15.0
CONNECT_TIMEOUT_S = 5  # seconds to reach a PostgreSQL server before it counts as out of reach


class DatabaseBusy(Unavailable):
    """The database stayed locked by another writer past the busy timeout (SQLite), or a
    lock wait gave up (PostgreSQL's lock_timeout); the unit of work was rolled back."""

    def __init__(self) -> None:
        super().__init__(
            "The database is busy with another change and did not free up in time. "
            "Nothing was changed; try again in a moment."
        )


class WriteConflict(Conflict):
    """PostgreSQL chose this transaction to give way to another (a serialization failure
    or a deadlock); it was rolled back whole, so trying again is safe."""

    def __init__(self) -> None:
        super().__init__(
            "Another change to the same story got there first. Nothing was changed; try again."
        )


class DatabaseUnavailable(Unavailable):
    """The database could not be reached (the server is down or restarting, the connection
    was lost, the file cannot be opened or written): not broken, out of reach. The unit of
    work was rolled back."""

    def __init__(self, what: str = "The database cannot be reached right now") -> None:
        super().__init__(
            f"{what}. Nothing was saved; try again in a moment (your story is kept as it was)."
        )
        self.retry_after = 5


# SQLite's primary result codes (the low byte of an extended code) and PostgreSQL's SQLSTATEs.
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6
_SQLITE_OUT_OF_REACH = {10: "The database file cannot be read or written (a disk error)",
                        13: "The disk holding the database is full",
                        14: "The database file cannot be opened"}  # fmt: skip
_PG_BUSY = {"55P03"}  # lock_not_available
_PG_CONFLICT = {"40001", "40P01"}  # serialization_failure, deadlock_detected
# connection_exception (08…), admin/crash shutdown, "the database system is starting up",
# too_many_connections, and the server's own resource limits
_PG_OUT_OF_REACH = ("08", "57P01", "57P02", "57P03", "53")


def database_refusal(
    error: DBAPIError,
) -> DatabaseBusy | WriteConflict | DatabaseUnavailable | None:
    """The refusal a database error means (busy: 503, a writers' conflict: 409, out of
    reach: 503), or None for any other failure, which stays an error of the server."""
    orig = getattr(error, "orig", None)
    if isinstance(orig, sqlite3.Error):
        code = getattr(orig, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return DatabaseBusy()
        if "is locked" in str(orig) or "database is busy" in str(orig):
            return DatabaseBusy()
        if code is not None and code & 0xFF in _SQLITE_OUT_OF_REACH:
            return DatabaseUnavailable(_SQLITE_OUT_OF_REACH[code & 0xFF])
        return None
    state = getattr(orig, "sqlstate", None)
    if state in _PG_BUSY:
        return DatabaseBusy()
    if state in _PG_CONFLICT:
        return WriteConflict()
    if (state and state.startswith(_PG_OUT_OF_REACH)) or error.connection_invalidated:
        return DatabaseUnavailable()
    if state is None and isinstance(error, OperationalError | InterfaceError):
        return DatabaseUnavailable()  # no answer at all: refused, reset, timed out
    return None


class UnsupportedDatabase(ValueError):
    """A database URL talekeeper cannot use; says which ones it can."""


def parse_database_url(url: str) -> URL:
    """The URL as SQLAlchemy reads it, with PostgreSQL pinned to the psycopg 3 driver.

    `postgresql://…` (what most hosts write) would pick psycopg2, which talekeeper does not
    install; `postgres://` (Heroku-style) is accepted as the same thing.
    """
    text_url = url.strip()
    if text_url.startswith("postgres://"):
        text_url = "postgresql://" + text_url[len("postgres://") :]
    try:
        parsed = make_url(text_url)
    except ArgumentError as exc:
        raise UnsupportedDatabase(f"Not a database URL: {url!r} ({exc}).") from exc
    if parsed.get_backend_name() == "postgresql":
        if parsed.get_driver_name() not in ("psycopg", "postgresql"):  # "postgresql": none given
            raise UnsupportedDatabase(
                f"talekeeper talks to PostgreSQL through psycopg 3; use postgresql+psycopg://… "
                f"(not the {parsed.get_driver_name()} driver)."
            )
        return parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite":
        return parsed
    raise UnsupportedDatabase(
        f"talekeeper stores its data in SQLite (the default) or PostgreSQL "
        f"(postgresql+psycopg://user:password@host:port/database), not {parsed.get_backend_name()}."
    )


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # FULL: a turn the player saw saved survives a power cut too, not only a crash;
    # the price is one fsync per commit, small beside a turn's generation.
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    cursor.close()


def make_engine(target: Path | URL) -> Engine:
    """An engine on a SQLite file (a path) or on the database a URL names."""
    if isinstance(target, Path):
        target.parent.mkdir(parents=True, exist_ok=True)
        target = URL.create("sqlite", database=str(target))
    if target.get_backend_name() == "sqlite":
        # `timeout`: the same busy wait, from the moment the connection opens (the pragmas
        # below need the file too).
        engine = create_engine(
            target, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S}
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # Times are read and written in UTC whatever the server's zone (SQLite has no zones);
    # pre_ping: a server restarted under a long-running app costs one failed request, not all.
    # connect_timeout: a server that does not answer is out of reach in seconds (503), not
    # after the system's minutes-long TCP timeout with a worker thread held meanwhile.
    return create_engine(
        target,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=20,
        pool_timeout=10,
        connect_args={"options": "-c timezone=UTC", "connect_timeout": CONNECT_TIMEOUT_S},
    )


def is_postgresql(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def serialize(session: Session, scope: int, key: int) -> None:
    """Until this session's transaction ends, no other transaction in any process passes
    `serialize` with the same (scope, key): for a read-then-write ("insert unless one
    exists") that several app processes might run at once. PostgreSQL: a transaction-scoped
    advisory lock. SQLite: nothing to do, its one app process runs such work one at a time
    and the file serialises its writers."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text("SELECT pg_advisory_xact_lock(CAST(:scope AS integer), CAST(:key AS integer))"),
            {"scope": scope, "key": key},
        )


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
    is upgraded, a copy is kept beside it (`talekeeper.db.rev-0001.bak`). PostgreSQL:
    see `_migrate_postgresql`.
    """
    config = Config()
    config.set_main_option("script_location", str(script_location))
    script = ScriptDirectory.from_config(config)
    head = script.get_current_head()
    with engine.connect() as connection:
        current = MigrationContext.configure(connection).get_current_revision()
    if current == head:
        return
    _check_known(script, current, head)
    if is_postgresql(engine):
        _migrate_postgresql(engine, config, script, head)
        return
    if current is not None:
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
                raise MigrationFailed(
                    f"the upgrade would leave rows pointing at nothing: {broken[:5]}"
                )
    except Exception as exc:
        raise _upgrade_failed(current, head, exc) from exc
    finally:
        upgrader.dispose()


def _upgrade_failed(current: str | None, head: str | None, exc: Exception) -> MigrationFailed:
    """What a failed upgrade says on either database: both roll back whole."""
    return MigrationFailed(
        f"Upgrading the database from schema {current or '(empty)'} to {head} failed: "
        f"{exc}. The upgrade was rolled back, so nothing was changed; talekeeper will not "
        "start on a half-upgraded database."
    )


def _check_known(script: ScriptDirectory, current: str | None, head: str | None) -> None:
    if current is None:
        return
    try:
        script.get_revision(current)
    except (CommandError, RevisionError) as exc:
        raise MigrationFailed(
            f"This database was written by a newer version of talekeeper (schema "
            f"revision {current}; this version knows up to {head}). Upgrade talekeeper "
            "to open it; the database was not touched."
        ) from exc


def _migrate_postgresql(
    engine: Engine, config: Config, script: ScriptDirectory, head: str | None
) -> None:
    """The same migrations, all or nothing, on PostgreSQL.

    PostgreSQL's DDL is transactional and its foreign keys are always enforced, so the
    upgrade is simply one transaction: a failure rolls every statement back. Several app
    processes may start at once on one database, so the upgrade first takes a
    transaction-scoped advisory lock and reads the revision again under it: the first
    process upgrades, the others find the schema current and go on.

    No copy is made beside the database as on SQLite: there is no file to copy, and a
    server's backups are the host's (`pg_dump`, see the README); since the upgrade either
    commits whole or not at all, the data a failed upgrade leaves is the data it found.
    """
    current = None
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_KEY})")
            current = MigrationContext.configure(connection).get_current_revision()
            if current == head:
                return
            _check_known(script, current, head)
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except MigrationFailed:
        raise
    except Exception as exc:
        raise _upgrade_failed(current, head, exc) from exc


def _migration_pragmas(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # we send BEGIN ourselves (see migrate)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=OFF")  # a no-op inside a transaction: set it first
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
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
    """The app's handle on its store: a SQLite file (a path) or a database URL."""

    def __init__(self, target: Path | str):
        if isinstance(target, str):
            self.url = parse_database_url(target)
            database = self.url.database if self.url.get_backend_name() == "sqlite" else None
            self.path = Path(database) if database and database != ":memory:" else None
            self.engine = make_engine(self.url)
        else:
            self.path = target
            self.engine = make_engine(target)
            self.url = self.engine.url
        migrate(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._lock_engine: Engine | None = None

    @classmethod
    def in_directory(cls, data_dir: Path) -> Database:
        return cls(data_dir / DB_FILENAME)

    @property
    def is_postgresql(self) -> bool:
        return is_postgresql(self.engine)

    def describe(self) -> str:
        """Where the data lives, for people: the file, or the server without its password."""
        if self.path is not None:
            return str(self.path)
        return self.url.render_as_string(hide_password=True)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A unit of work: commits on success, rolls back everything on any error.

        A lock that outlasts the busy timeout, a writers' conflict, or a database out of
        reach comes out as `DatabaseBusy` / `WriteConflict` / `DatabaseUnavailable`: a
        refusal with words, like any other."""
        try:
            with self._sessions() as session, session.begin():
                yield session
        except DBAPIError as exc:
            refusal = database_refusal(exc)
            if refusal is None:
                raise
            raise refusal from exc
        except PoolTimeout as exc:  # every connection taken, none freed in time
            raise DatabaseUnavailable("The database has no free connection right now") from exc

    def lock_engine(self) -> Engine:
        """Connections for holding locks in the database (PostgreSQL's advisory locks): a
        pool of their own, so a held lock never takes one the sessions need, in autocommit,
        so holding one opens no transaction."""
        if self._lock_engine is None:
            self._lock_engine = create_engine(
                self.engine.url,
                isolation_level="AUTOCOMMIT",
                pool_pre_ping=True,
                pool_size=5,
                max_overflow=45,
                pool_timeout=10,
                connect_args={"connect_timeout": CONNECT_TIMEOUT_S},
            )
        return self._lock_engine

    def dispose(self) -> None:
        self.engine.dispose()
        if self._lock_engine is not None:
            self._lock_engine.dispose()
