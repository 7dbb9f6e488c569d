"""The first schema: scenarios, adventures, the story tree, Save Points, settings.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scenarios",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("builtin", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "adventures",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "scenario_id",
            sa.String(80),
            sa.ForeignKey("scenarios.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("root_node_id", sa.Integer(), nullable=True),
        sa.Column("head_node_id", sa.Integer(), nullable=True),
        sa.Column("plot", sa.JSON(), nullable=False),
        sa.Column("turn_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_played_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "nodes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "adventure_id",
            sa.Integer(),
            sa.ForeignKey("adventures.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "parent_id", sa.Integer(), sa.ForeignKey("nodes.id", ondelete="CASCADE"), nullable=True
        ),
        sa.Column("active_child_id", sa.Integer(), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("action_kind", sa.String(16), nullable=False),
        sa.Column("action_text", sa.Text(), nullable=False),
        sa.Column("narration", sa.Text(), nullable=False),
        sa.Column("reasoning", sa.Text(), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=True),
        sa.Column("proposal", sa.LargeBinary(), nullable=True),
        sa.Column("branch_name", sa.String(200), nullable=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_nodes_adventure_id", "nodes", ["adventure_id"])
    op.create_index("ix_nodes_adventure_parent", "nodes", ["adventure_id", "parent_id"])
    op.create_table(
        "save_points",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "adventure_id",
            sa.Integer(),
            sa.ForeignKey("adventures.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "node_id", sa.Integer(), sa.ForeignKey("nodes.id", ondelete="RESTRICT"), nullable=False
        ),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_save_points_adventure_id", "save_points", ["adventure_id"])
    op.create_table(
        "settings",
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("value", sa.JSON(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("settings")
    op.drop_table("save_points")
    op.drop_table("nodes")
    op.drop_table("adventures")
    op.drop_table("scenarios")
