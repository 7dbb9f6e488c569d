"""Search reads an index of the turns' text instead of every turn (store/text_index.py).

SQLite: an FTS5 table `node_words` over nodes' narration and action, trigram tokenizer,
`detail=none`, its content read from `nodes`; `nodes.in_index` marks the rows entered
(a search enters the rows it has not seen, so existing stories need no pass here: each is
entered by its first search), a partial index finds the rows waiting, and two triggers
take a row out of the index when it is deleted or its text changes. An SQLite without
the trigram tokenizer gets no table: search then scans, as before. (A later migration
that rebuilds `nodes` must make the triggers again.)

PostgreSQL: pg_trgm's GIN indexes on `narration` and `action_text`, which ILIKE uses. A
server where pg_trgm cannot be created gets none: search then scans, as before.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_SQLITE = [
    "CREATE VIRTUAL TABLE node_words USING fts5(narration, action_text, content='nodes', "
    "content_rowid='id', tokenize='trigram', detail='none')",
    """CREATE TRIGGER node_words_gone AFTER DELETE ON nodes WHEN old.in_index BEGIN
        INSERT INTO node_words (node_words, rowid, narration, action_text)
        VALUES ('delete', old.id, old.narration, old.action_text);
    END""",
    """CREATE TRIGGER node_words_changed AFTER UPDATE OF narration, action_text ON nodes
    WHEN old.in_index BEGIN
        INSERT INTO node_words (node_words, rowid, narration, action_text)
        VALUES ('delete', old.id, old.narration, old.action_text);
        UPDATE nodes SET in_index = 0 WHERE id = new.id;
    END""",
]
_POSTGRESQL = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX ix_nodes_narration_trgm ON nodes USING gin (narration gin_trgm_ops)",
    "CREATE INDEX ix_nodes_action_trgm ON nodes USING gin (action_text gin_trgm_ops)",
]


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(
            sa.Column("in_index", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    connection = op.get_bind()
    if connection.dialect.name == "sqlite":
        op.execute("CREATE INDEX ix_nodes_waiting ON nodes (adventure_id) WHERE in_index = 0")
        try:
            with connection.begin_nested():
                connection.exec_driver_sql(_SQLITE[0])
        except sa.exc.OperationalError:  # no FTS5 or no trigram tokenizer: search scans
            return
        for statement in _SQLITE[1:]:
            connection.exec_driver_sql(statement)
    else:
        try:
            with connection.begin_nested():
                for statement in _POSTGRESQL:
                    connection.exec_driver_sql(statement)
        except sa.exc.DBAPIError:  # pg_trgm not installed or not ours to create: search scans
            pass


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "sqlite":
        for name in ("node_words_gone", "node_words_changed"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS node_words")
        op.execute("DROP INDEX IF EXISTS ix_nodes_waiting")
    else:
        op.execute("DROP INDEX IF EXISTS ix_nodes_narration_trgm")
        op.execute("DROP INDEX IF EXISTS ix_nodes_action_trgm")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("in_index")
