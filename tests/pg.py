"""PostgreSQL for the tests.

The suite runs on SQLite by default. With `TALEKEEPER_DATABASE_URL` set to a PostgreSQL
server (`make test` does so for its second pass; `scripts/postgres.sh` starts one), the
same tests run on PostgreSQL: the session creates a database of its own on that server
(dropped at the end), points `TALEKEEPER_DATABASE_URL` at it (so `talekeeper serve`
subprocesses use it too), and every test starts from empty tables (truncated, identities
restarted: as fast as a fresh SQLite file and as clean). Tests that need PostgreSQL
itself (several app processes on one database) skip when it is not configured.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from talekeeper.store.db import DATABASE_URL_ENV, parse_database_url

NEEDS_POSTGRESQL = (
    "needs PostgreSQL: set TALEKEEPER_DATABASE_URL to a server "
    "(scripts/postgres.sh starts one; `make test` runs a PostgreSQL pass when it can)"
)


def configured_url() -> URL | None:
    """The PostgreSQL server the tests were pointed at, if any."""
    raw = os.environ.get(DATABASE_URL_ENV)
    if not raw:
        return None
    url = parse_database_url(raw)
    return url if url.get_backend_name() == "postgresql" else None


def on_postgresql() -> bool:
    return configured_url() is not None


postgresql_only = pytest.mark.skipif(not on_postgresql(), reason=NEEDS_POSTGRESQL)


def _admin(url: URL):
    return create_engine(
        url.set(database="postgres"), isolation_level="AUTOCOMMIT", poolclass=NullPool
    )


def create_database(server: URL, name: str) -> URL:
    engine = _admin(server)
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    finally:
        engine.dispose()
    return server.set(database=name)


def drop_database(server: URL, name: str) -> None:
    engine = _admin(server)
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        engine.dispose()


@contextmanager
def fresh_database(server: URL, name: str) -> Iterator[str]:
    """An empty database of its own for one test (migrations from nothing, say)."""
    url = create_database(server, name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        drop_database(server, name)


def empty_tables(url: URL) -> None:
    """Every table emptied and its ids restarted; the schema (and its revision) stays."""
    engine = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with engine.connect() as connection:
            # A connection left inside a transaction by an earlier test would block TRUNCATE.
            connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND state LIKE 'idle in transaction%'"
                )
            )
            tables = (
                connection.execute(
                    text(
                        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                        "AND tablename <> 'alembic_version'"
                    )
                )
                .scalars()
                .all()
            )
            if tables:
                names = ", ".join(f'"{t}"' for t in tables)
                connection.exec_driver_sql("SET lock_timeout = '10s'")
                connection.exec_driver_sql(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
    finally:
        engine.dispose()


@contextmanager
def own_database(name: str) -> Iterator[str | None]:
    """For a fixture that outlives one test (module scope) or stands for a second
    installation: on PostgreSQL, a database of its own (the per-test emptying of the shared
    one must not touch it); on SQLite, None (its own data folder is its own file)."""
    server = configured_url()
    if server is None:
        yield None
        return
    with fresh_database(server, f"{server.database}_{name}") as url:
        yield url
