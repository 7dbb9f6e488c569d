"""A turn remembers which sibling it tells again (a retry or an edit), so a new action
written after going back begins a line instead of counting as another take of the turn it
replaced (story/takes.families).

Turns written before this column are read by the older rule: a sibling with the same
action as an earlier one is a take of it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("take_of", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("take_of")
