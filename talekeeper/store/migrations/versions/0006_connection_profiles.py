"""Connection profiles: named ways to reach a model (service, endpoint, model, an encrypted
key, mode, samplers, context budget), each a player's own with accounts on.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-10
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "connection_profiles",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "owner_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=True
        ),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("service", sa.String(40), nullable=False),
        sa.Column("provider", sa.String(20), nullable=False),
        sa.Column("endpoint", sa.String(500), nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("key_sealed", sa.Text(), nullable=True),
        sa.Column("samplers", sa.JSON(), nullable=False),
        sa.Column("context_budget", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_connection_profiles_owner_id", "connection_profiles", ["owner_id"])


def downgrade() -> None:
    op.drop_index("ix_connection_profiles_owner_id", table_name="connection_profiles")
    op.drop_table("connection_profiles")
