"""A turn whose background step is still running: the adventure names it.

A turn is written as soon as its narration has streamed; the model's
state pass and a companion's remark finish afterwards, under the adventure's writer lock,
and settle the same turn in a second short transaction. `pending_turn_id` names that turn
until then (null: nothing pending). A process that dies in between leaves it set; the next
writer (or the next start) marks the turn as not updated, so it never stays half-done.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("adventures") as batch:
        batch.add_column(sa.Column("pending_turn_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("adventures") as batch:
        batch.drop_column("pending_turn_id")
