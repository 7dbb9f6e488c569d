"""The search index's triggers made again (SQLite).

Migration 0012 added two columns to `nodes` in batch mode, which on SQLite copies the table
into a new one, and the copy drops the table's triggers: the two that take a row out of
`node_words` when its text changes or it is deleted (migration 0011). Without them a search
kept finding a rewritten opening's old words and missed its new ones. Where they are
missing they are made again (the statements are 0011's, written out here: migrations are
frozen history), and since rows may have changed meanwhile, the index is emptied and every
row marked to be entered again by the next search (store/text_index.py), as for a story
never searched. A database that has them, PostgreSQL, and an SQLite without the index are
left alone.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

TRIGGERS = {
    "node_words_gone": """CREATE TRIGGER node_words_gone AFTER DELETE ON nodes WHEN old.in_index BEGIN
        INSERT INTO node_words (node_words, rowid, narration, action_text)
        VALUES ('delete', old.id, old.narration, old.action_text);
    END""",
    "node_words_changed": """CREATE TRIGGER node_words_changed AFTER UPDATE OF narration, action_text ON nodes
    WHEN old.in_index BEGIN
        INSERT INTO node_words (node_words, rowid, narration, action_text)
        VALUES ('delete', old.id, old.narration, old.action_text);
        UPDATE nodes SET in_index = 0 WHERE id = new.id;
    END""",
}


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name != "sqlite":
        return
    schema = connection.exec_driver_sql(
        "SELECT type, name FROM sqlite_master WHERE name = 'node_words' OR type = 'trigger'"
    ).all()
    if ("table", "node_words") not in schema:
        return  # no FTS5 trigram index here: search scans
    made = {name for kind, name in schema if kind == "trigger"}
    if set(TRIGGERS) <= made:
        return
    connection.exec_driver_sql("INSERT INTO node_words (node_words) VALUES ('delete-all')")
    connection.exec_driver_sql("UPDATE nodes SET in_index = 0")
    for name, statement in TRIGGERS.items():
        if name not in made:
            connection.exec_driver_sql(statement)


def downgrade() -> None:
    pass  # the triggers belong to 0011
