"""Context and memory: per-turn Insights, their deduplicated texts, the memory bank,
story summaries anchored to nodes, and the memory bank's run status.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _adventure_fk() -> sa.Column:
    return sa.Column(
        "adventure_id",
        sa.Integer(),
        sa.ForeignKey("adventures.id", ondelete="CASCADE"),
        nullable=False,
    )


def _node_fk(primary_key: bool = False) -> sa.Column:
    return sa.Column(
        "node_id",
        sa.Integer(),
        sa.ForeignKey("nodes.id", ondelete="CASCADE"),
        nullable=False,
        primary_key=primary_key,
    )


def upgrade() -> None:
    op.create_table(
        "turn_insights",
        _node_fk(primary_key=True),
        _adventure_fk(),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_index("ix_turn_insights_adventure_id", "turn_insights", ["adventure_id"])
    op.create_table(
        "context_texts",
        sa.Column(
            "adventure_id",
            sa.Integer(),
            sa.ForeignKey("adventures.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("digest", sa.String(32), primary_key=True),
        sa.Column("text", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "memories",
        sa.Column("id", sa.Integer(), primary_key=True),
        _adventure_fk(),
        _node_fk(),
        sa.Column("first_depth", sa.Integer(), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("uses", sa.Integer(), nullable=False),
        sa.Column("last_used_depth", sa.Integer(), nullable=True),
        sa.Column("embedding", sa.LargeBinary(), nullable=True),
        sa.Column("embedding_dim", sa.Integer(), nullable=True),
        sa.Column("embedding_model", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_memories_adventure_node", "memories", ["adventure_id", "node_id"])
    op.create_table(
        "story_summaries",
        sa.Column("id", sa.Integer(), primary_key=True),
        _adventure_fk(),
        _node_fk(),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_story_summaries_adventure_node", "story_summaries", ["adventure_id", "node_id"]
    )
    op.create_table(
        "memory_status",
        sa.Column(
            "adventure_id",
            sa.Integer(),
            sa.ForeignKey("adventures.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("last_error_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("memory_status")
    op.drop_table("story_summaries")
    op.drop_table("memories")
    op.drop_table("context_texts")
    op.drop_table("turn_insights")
