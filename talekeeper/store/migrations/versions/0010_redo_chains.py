"""Each node names the redo chain it is on (story/chains.py), so whether a turn is on the
line being read, or ahead of it by Redo, is a comparison of labels instead of a walk along
the story (the Save Points panel walked the whole line; search, the memory bank and the
lines list read the path the same way).

A chain is a run of turns each its parent's active child. The data migration labels every
existing node: parents before children, a node its parent's Redo follows takes its
parent's label, any other starts a chain.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_BATCH = 1000


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("chain", sa.Integer(), nullable=True))
    op.create_index("ix_nodes_chain", "nodes", ["adventure_id", "chain", "depth"])
    nodes = sa.table(
        "nodes",
        sa.column("id", sa.Integer),
        sa.column("adventure_id", sa.Integer),
        sa.column("parent_id", sa.Integer),
        sa.column("active_child_id", sa.Integer),
        sa.column("depth", sa.Integer),
        sa.column("chain", sa.Integer),
    )
    connection = op.get_bind()
    adventures = connection.execute(sa.select(nodes.c.adventure_id).distinct()).scalars().all()
    write = (
        sa.update(nodes).where(nodes.c.id == sa.bindparam("node")).values(chain=sa.bindparam("c"))
    )
    for adventure in adventures:
        rows = connection.execute(
            sa.select(nodes.c.id, nodes.c.parent_id, nodes.c.active_child_id)
            .where(nodes.c.adventure_id == adventure)
            .order_by(nodes.c.depth, nodes.c.id)
        )
        label: dict[int, int] = {}
        active: dict[int, int | None] = {}
        count = 0
        for node_id, parent_id, active_child in rows:
            active[node_id] = active_child
            if parent_id is not None and active.get(parent_id) == node_id:
                label[node_id] = label[parent_id]
            else:
                count += 1
                label[node_id] = count
        pending = [{"node": n, "c": c} for n, c in label.items()]
        for i in range(0, len(pending), _BATCH):
            connection.execute(write, pending[i : i + _BATCH])


def downgrade() -> None:
    op.drop_index("ix_nodes_chain", table_name="nodes")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("chain")
