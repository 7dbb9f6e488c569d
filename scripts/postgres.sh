#!/bin/sh
# Start a PostgreSQL server on loopback for talekeeper (tests, the load test, a host trying
# it out) and print its database URL on the last line of stdout.
#
# Installs Debian's `postgresql` package when it is missing (as root, like CI), creates the
# Debian cluster if there is none, starts it (it listens on localhost only, Debian's default),
# and makes a role and a database `talekeeper` (password `talekeeper`: loopback only, for
# tests; a real host picks its own). Safe to run again: each step is skipped when done.
# Exits 3 (and says why) when PostgreSQL is not installed and cannot be installed here.
set -eu

ROLE=${TALEKEEPER_PG_ROLE:-talekeeper}
DB=${TALEKEEPER_PG_DB:-talekeeper}
PASSWORD=${TALEKEEPER_PG_PASSWORD:-talekeeper}

if ! command -v pg_lsclusters >/dev/null 2>&1 || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "postgres.sh: installing PostgreSQL from Debian's packages" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    else
        echo "postgres.sh: PostgreSQL is not installed and this user cannot install it" >&2
        exit 3
    fi
fi

VERSION=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -qx "$VERSION main"; then
    pg_createcluster "$VERSION" main >&2
fi
if ! pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main" {print $4}' | grep -q online; then
    pg_ctlcluster "$VERSION" main start >&2
fi
PORT=$(pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main" {print $3}')

as_postgres() {
    if [ "$(id -u)" = 0 ]; then su postgres -c "$1"; else sh -c "$1"; fi
}
psql_admin="psql -X -q -p $PORT -d postgres -v ON_ERROR_STOP=1"
if [ "$(as_postgres "$psql_admin -tAc \"SELECT 1 FROM pg_roles WHERE rolname='$ROLE'\"")" != 1 ]; then
    as_postgres "$psql_admin -c \"CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'\"" >&2
fi
if [ "$(as_postgres "$psql_admin -tAc \"SELECT 1 FROM pg_database WHERE datname='$DB'\"")" != 1 ]; then
    as_postgres "$psql_admin -c \"CREATE DATABASE $DB OWNER $ROLE\"" >&2
fi
echo "postgresql+psycopg://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
