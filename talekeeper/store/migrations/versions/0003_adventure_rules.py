"""Each adventure keeps its own copy of the scenario's rules (the state engine's declaration),
so editing a scenario never changes the rules of a story already being played.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("adventures") as batch:
        batch.add_column(sa.Column("rules", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("adventures") as batch:
        batch.drop_column("rules")
