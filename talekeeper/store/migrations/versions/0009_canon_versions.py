"""An adventure updated from its scenario keeps each canon it has had, for Undo.

"Update from the scenario" (service/scenario_update.py) takes a scenario's newer plot
texts and rules into an adventure as a step of its story. `canon` remembers the plot
texts and rules in force on each side of every such step — `{"in_force": node id | null,
"versions": {"base" | node id: {"plot": …, "rules": …}}}` — so that moving the head
across one (Undo, Redo, a Save Point, another line) brings its canon with it
(story/canon_versions.py). Null for an adventure never updated: nothing to follow.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("adventures") as batch:
        batch.add_column(sa.Column("canon", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("adventures") as batch:
        batch.drop_column("canon")
