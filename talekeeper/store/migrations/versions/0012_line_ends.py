"""Each node keeps how many children it has and whether it ends a line, so the lines are
listed from their ends (story/line_ends.py, story/branches.list_lines) instead of from the
whole tree; the redo-chain index carries the children count, so a line's own turns are
counted from the index alone.

The data migration works both out for every existing story: children counted in SQL; a
leaf ends a line as `line_ends.ends` says (written out here, as it is today, so this
migration keeps its meaning whatever the code becomes): a leaf saved, named, alone, or
being read does; an undone correction or update does not unless Redo follows it; of the
bare takes of one turn (a retry or an edit joins the family of the turn it retells, else
an earlier sibling with the same action), none does when one of them goes on, else the one
read, else the one Redo follows, else the newest. The opening ends a line while it is all
there is.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

STEPS = ("correction", "update")


def _families(children: list) -> dict[int, int]:
    root: dict[int, int] = {}
    first_with: dict[tuple[str, str], int] = {}
    for c in sorted(children, key=lambda c: c.id):
        if c.action_kind in STEPS:
            root[c.id] = c.id
            continue
        if c.take_of is not None and c.take_of in root:
            root[c.id] = root[c.take_of]
        else:
            root[c.id] = first_with.get((c.action_kind, c.action_text), c.id)
        first_with.setdefault((c.action_kind, c.action_text), root[c.id])
    return root


def _ends(children: list, count: dict[int, int], active, head, saved: set[int]) -> set[int]:  # noqa: ANN001
    family = _families(children)
    goes_on = {family[c.id] for c in children if count.get(c.id)}
    out = set()
    for c in children:
        if count.get(c.id):
            continue
        if c.id in saved or c.branch_name is not None or len(children) == 1 or c.id == head:
            out.add(c.id)
        elif c.action_kind in STEPS and c.id != active:
            continue
        elif family[c.id] not in goes_on:
            same = [k.id for k in children if family[k.id] == family[c.id]]
            rep = next((r for r in (head, active) if r in same), max(same))
            if c.id == rep:
                out.add(c.id)
    return out


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("child_count", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("line_end", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.drop_index("ix_nodes_chain", table_name="nodes")
    op.create_index("ix_nodes_chain", "nodes", ["adventure_id", "chain", "depth", "child_count"])
    op.create_index("ix_nodes_line_end", "nodes", ["adventure_id", "line_end"])
    connection = op.get_bind()
    connection.exec_driver_sql(
        "UPDATE nodes SET child_count = (SELECT count(*) FROM nodes AS c "
        "WHERE c.adventure_id = nodes.adventure_id AND c.parent_id = nodes.id)"
    )
    nodes = sa.table(
        "nodes",
        *(
            sa.column(name)
            for name in (
                "id",
                "adventure_id",
                "parent_id",
                "active_child_id",
                "action_kind",
                "action_text",
                "take_of",
                "branch_name",
                "child_count",
                "line_end",
            )
        ),
    )
    heads = dict(connection.execute(sa.text("SELECT id, head_node_id FROM adventures")).all())
    saved = {r[0] for r in connection.execute(sa.text("SELECT node_id FROM save_points"))}
    mark = sa.update(nodes).where(nodes.c.id == sa.bindparam("node")).values(line_end=True)
    for adventure, head in heads.items():
        rows = connection.execute(sa.select(nodes).where(nodes.c.adventure_id == adventure)).all()
        count = {r.id: r.child_count for r in rows}
        active = {r.id: r.active_child_id for r in rows}
        by_parent: dict = {}
        for r in rows:
            by_parent.setdefault(r.parent_id, []).append(r)
        line: set[int] = set()
        for parent, children in by_parent.items():
            if parent is None:
                line.update(c.id for c in children if not count[c.id])
            else:
                line.update(_ends(children, count, active.get(parent), head, saved))
        if line:
            connection.execute(mark, [{"node": n} for n in sorted(line)])


def downgrade() -> None:
    op.drop_index("ix_nodes_line_end", table_name="nodes")
    op.drop_index("ix_nodes_chain", table_name="nodes")
    # (not in batch mode: rebuilding `nodes` would drop the triggers migration 0011 made)
    op.drop_column("nodes", "line_end")
    op.drop_column("nodes", "child_count")
    op.create_index("ix_nodes_chain", "nodes", ["adventure_id", "chain", "depth"])
