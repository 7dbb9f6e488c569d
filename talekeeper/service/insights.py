"""Insights: what was sent to the model for a turn and why, and the dry run for the next one.

The web's JSON route and its HTML panel, and anything else, call these; the transaction is
opened here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from talekeeper.context import insights
from talekeeper.service import roles
from talekeeper.service.adventures import get_turn
from talekeeper.service.unit_of_work import reading
from talekeeper.story.actions import normalise_action
from talekeeper.views.context import Insights

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper


def of_turn(tk: Talekeeper, adventure_id: int, node_id: int) -> Insights:
    """Every section sent for turn `node_id`, rebuilt and checked against its stored digest.

    A missing turn is AdventureNotFound and a turn without stored Insights InsightsMissing
    (both 404)."""
    with reading(tk, adventure_id) as (session, adventure):
        node = get_turn(session, adventure, node_id)
        assembly, record = insights.load(session, node)
        depth = node.depth
        calls = roles.role_calls(
            session, node_id, adventure_id
        )  # each other role's prompt (banter)
    request = insights.rebuild_request(assembly, record)
    view = insights.view(assembly, request, record)
    return Insights(
        node_id=node_id,
        turn=depth,
        **view,
        role=record.get("role", "narrator"),
        calls=calls,
    )


async def of_next(tk: Talekeeper, adventure_id: int, kind: str, text: str) -> Insights:
    """Dry run: what would be sent for this action now. Calls no model and writes nothing."""
    from talekeeper.service.turns import build_context

    kind, text = normalise_action(kind, text)
    prepared = await build_context(tk, adventure_id, kind, text)
    return Insights(
        node_id=None,
        turn=prepared.head.depth + 1,
        dry_run=True,
        **insights.view(prepared.assembly, prepared.request),
    )


def recent_turns(tk: Talekeeper, adventure_id: int, count: int = 30) -> list[tuple[int, int]]:
    """(node id, turn number) of the latest turns on the path to the head, newest first."""
    from talekeeper.memory.bank import path_ids

    with reading(tk, adventure_id) as (session, adventure):
        ids = path_ids(session, adventure.head_node_id) if adventure.head_node_id else []
    return [(node_id, depth) for depth, node_id in list(enumerate(ids))[::-1][:count] if depth > 0]
