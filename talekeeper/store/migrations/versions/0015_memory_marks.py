"""The memory bank's marks: what its run after a turn found about the block ends below a
block end (store/models.py `MemoryMark`), so the next run, in this process or another, after
a restart, an undo or a jump to another line, asks only about the ends past the nearest mark
on its path instead of every block end on it. A database without marks is simply checked in
full once per path (`memory/bank.py` `due_blocks`), so nothing is filled in here.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_marks",
        sa.Column(
            "node_id",
            sa.Integer(),
            sa.ForeignKey("nodes.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("every", sa.Integer(), nullable=False),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("gaps", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("memory_marks")
