"""An index on each column that names a deleted turn and had none of its own, so deleting
turns looks their references up instead of reading whole tables.

Deleting a node makes the database find every row that refers to it (SQLite's foreign-key
check, each cascade on either database): its children by `nodes.parent_id` and the
memories and story summaries it anchors by `node_id`. Those columns were indexed only
second, after `adventure_id` (`ix_nodes_adventure_parent`, `ix_memories_adventure_node`,
`ix_story_summaries_adventure_node`), which a lookup by the node alone cannot use: deleting
a 2-turn line read every node, memory and summary of every story once per deleted turn
(18 ms of a 29 ms delete at 10,000 turns). Save Points (a few per story) and Insights (the
node is its key) need none.

Plain `CREATE INDEX`, never a batch rebuild of `nodes` (that would drop the search index's
triggers: migration 0013).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

INDEXES = {
    "ix_nodes_parent_id": ("nodes", "parent_id"),
    "ix_memories_node_id": ("memories", "node_id"),
    "ix_story_summaries_node_id": ("story_summaries", "node_id"),
}


def upgrade() -> None:
    for name, (table, column) in INDEXES.items():
        op.create_index(name, table, [column])


def downgrade() -> None:
    for name, (table, _column) in INDEXES.items():
        op.drop_index(name, table_name=table)
