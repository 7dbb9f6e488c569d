"""Which turns of an adventure hold a piece of text, read from an index instead of every
turn's narration (migration 0011).

- **SQLite**: an FTS5 table over each node's narration and action (`node_words`), with the
  trigram tokenizer: every run of three characters, case folded, is a term, so any text of
  three characters or more is looked up as the terms it is made of. `detail=none` keeps
  only which rows hold each term (no positions), a third of a full index. A row is entered
  when a search first needs it (`bring_up_to_date`), not when it is written: neither a
  turn nor a bundle import pays for the index, and a search pays once for the turns played
  since the last one. `nodes.in_index` marks the rows entered; triggers take a row out
  again when it is deleted or its text changes (an opening rewritten, a turn settled).
- **PostgreSQL**: `pg_trgm`'s GIN indexes on the two columns, which `ILIKE` itself uses.

The index only narrows: every row it offers is checked against the search's own `LIKE`
(`ILIKE`) pattern, so what is found is exactly what scanning every turn found. Where there
is no index (a query shorter than three characters, an SQLite without the trigram
tokenizer, a server without pg_trgm) `hits` says so and the caller scans.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, column, inspect, or_, select, text, update
from sqlalchemy.orm import Session

from talekeeper.store.models import Node

TABLE = "node_words"
SHORTEST = 3  # characters: a trigram
_BATCH = 500
_entering = threading.Lock()  # (SQLite) one search enters rows at a time
_known: dict[str, bool] = {}  # database URL → whether it has the index
_INDEXES = ("ix_nodes_waiting", "ix_nodes_narration_trgm", "ix_nodes_action_trgm")


def made_here(name: str) -> bool:
    """Whether a table or an index is the text index's own, made by migration 0011 beside
    the models (the FTS5 table and its shadow tables, a partial index, pg_trgm's indexes):
    what comparing the models with a database leaves out."""
    return name.startswith(TABLE) or name in _INDEXES


def available(session: Session) -> bool:
    """Whether this database has the index (kept per database: it never goes away)."""
    bind = session.get_bind()
    url = str(bind.url)
    if url not in _known:
        found = inspect(session.connection())
        names = {i["name"] for i in found.get_indexes("nodes")}
        if bind.dialect.name == "postgresql":
            _known[url] = "ix_nodes_narration_trgm" in names
        else:  # the rows waiting to be entered are read through ix_nodes_waiting, by name
            _known[url] = TABLE in found.get_table_names() and "ix_nodes_waiting" in names
    return _known[url]


def match_expression(query: str) -> str:
    """The FTS5 query for rows holding every trigram of `query` (each quoted: any
    character is a literal)."""
    grams = dict.fromkeys(query[i : i + SHORTEST] for i in range(len(query) - SHORTEST + 1))
    return " ".join('"' + g.replace('"', '""') + '"' for g in grams)


def pattern(query: str) -> str:
    """`query` as a LIKE pattern that matches it anywhere, its `%`, `_` and `\\` literal."""
    return "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def holds(query: str) -> Any:
    """The search's own test: the action or the narration holds `query`, in any case."""
    like = pattern(query)
    return or_(Node.narration.ilike(like, escape="\\"), Node.action_text.ilike(like, escape="\\"))


# The rows waiting to be entered are read through the partial index ix_nodes_waiting, named:
# left to choose, SQLite took ix_nodes_adventure_id and read every row of the adventure
# (7 ms at 10,000 turns, on every search). Both statements run only where `available`
# found the index.
_WAITING = text(
    "SELECT id, narration, action_text FROM nodes INDEXED BY ix_nodes_waiting "
    f"WHERE adventure_id = :adventure AND in_index = 0 LIMIT {_BATCH}"
)
_ENTER = text(f"INSERT INTO {TABLE} (rowid, narration, action_text) VALUES (:id, :n, :a)")


def bring_up_to_date(session: Session, adventure_id: int, pending: int | None) -> int:
    """(SQLite) Enter the adventure's rows not in the index yet, but the turn still being
    settled (`pending`: its text may change once more). Returns how many. Run in a
    transaction of its own, before the search reads."""
    if session.get_bind().dialect.name != "sqlite" or not available(session):
        return 0
    entered = 0
    with _entering:
        while True:
            rows = [
                r for r in session.execute(_WAITING, {"adventure": adventure_id}) if r.id != pending
            ]
            if not rows:
                return entered
            session.execute(
                _ENTER, [{"id": r.id, "n": r.narration, "a": r.action_text} for r in rows]
            )
            session.execute(
                update(Node)
                .where(Node.id.in_([r.id for r in rows]))
                .values(in_index=True)
                .execution_options(synchronize_session=False)
            )
            entered += len(rows)
            if len(rows) < _BATCH:
                return entered


def hits(
    session: Session, adventure_id: int, query: str, columns: Sequence[Any], cap: int
) -> list[Any] | None:
    """`columns` of the adventure's nodes holding `query`, at most `cap` of them (in no
    order), read through the index; None where the index cannot answer."""
    if len(query) < SHORTEST or not available(session):
        return None
    found = select(*columns).where(Node.adventure_id == adventure_id, holds(query))
    if session.get_bind().dialect.name != "sqlite":
        return list(session.execute(found.limit(cap)))
    words = _MATCH.bindparams(words=match_expression(query))
    rows = list(session.execute(found.where(Node.id.in_(words)).limit(cap)))
    waiting = _WAITING_IDS.bindparams(adventure=adventure_id)  # the turn being settled, if any
    return rows + list(session.execute(found.where(Node.id.in_(waiting)).limit(cap)))


_MATCH = text(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH :words").columns(
    column("rowid", Integer)
)
_WAITING_IDS = text(
    "SELECT id FROM nodes INDEXED BY ix_nodes_waiting "
    "WHERE adventure_id = :adventure AND in_index = 0"
).columns(column("id", Integer))
