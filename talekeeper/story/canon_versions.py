"""Which canon an adventure's head is under, once it has been updated from its scenario.

An update from the scenario (`service/scenario_update.py`) is a step of the story: a node
of kind `update` below the head, after which the adventure plays by the scenario's newer
plot texts and rules. Undo takes it back like any step — so the canon must move with the
head. `Adventure.canon` keeps every canon the adventure has had: `versions["base"]` the
one before any update, `versions[<node id>]` the one after each update node, each kept as
it last was (an edit of the author's note after an update belongs to that update's
canon), and `in_force` the update node whose canon is the adventure's plot and rules now
(null: the base). The canon in force at a node is that of the nearest update node on its
path to the root (none: the base).

`follow` is called by every head move (`tree.move_head`); an adventure never updated has
no `canon` and costs nothing. Only the texts an update takes (`UPDATED_PLOT`) and the
rules switch: the story summary and the player's persona are the story's own.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session, object_session

from talekeeper.store.models import Adventure, Node

UPDATE = "update"
"""The action kind of an update node (no action line: it adds no history)."""
UPDATED_PLOT = (
    "narrator_instructions",
    "ai_instructions",
    "plot_essentials",
    "author_note",
    "story_cards",
)
"""The plot texts an update from the scenario takes (the rest are the story's own)."""
BASE = "base"
PARTS = {
    "narrator_instructions": "Narrator instructions",
    "ai_instructions": "AI instructions",
    "plot_essentials": "Plot essentials",
    "author_note": "Author's note",
    "story_cards": "Story cards",
    "rules": "Rules: characters, places, stats, goals and canon",
}
"""What an update can take, each on its own (the player chooses in its preview), in words."""

_NEAREST_UPDATE = text(
    """
    WITH RECURSIVE up(id, parent_id, action_kind, n) AS (
        SELECT id, parent_id, action_kind, 0 FROM nodes WHERE id = :start
        UNION ALL
        SELECT nodes.id, nodes.parent_id, nodes.action_kind, up.n + 1
        FROM nodes JOIN up ON nodes.id = up.parent_id
        WHERE up.action_kind != :update
    )
    SELECT id FROM up WHERE action_kind = :update ORDER BY n LIMIT 1
    """
)


def canon_of(adventure: Adventure) -> dict[str, Any]:
    """The canon the adventure plays by now: its update-able plot texts and its rules."""
    plot = adventure.plot or {}
    return {
        "plot": {k: plot[k] for k in UPDATED_PLOT if k in plot},
        "rules": adventure.rules,
    }


def nearest_update(session: Session, node_id: int) -> int | None:
    """The update node at or nearest above `node_id`, or None."""
    found = session.execute(_NEAREST_UPDATE, {"start": node_id, "update": UPDATE}).first()
    return int(found[0]) if found else None


def start_following(
    adventure: Adventure, update: Node, before: dict[str, Any], after: dict[str, Any]
) -> None:
    """Record `update`, just written below the head whose canon was `before`, and put its
    canon (`after`) in force."""
    versions = dict((adventure.canon or {}).get("versions") or {})
    in_force = (adventure.canon or {}).get("in_force")
    if in_force == update.id:  # (moving the head there brought it already)
        in_force = (
            nearest_update(object_session(adventure), update.parent_id)
            if update.parent_id
            else None
        )  # type: ignore[arg-type]
    versions[_key(in_force)] = before
    versions[str(update.id)] = after
    _put(adventure, after)
    adventure.canon = {"in_force": update.id, "versions": versions}


def follow(adventure: Adventure, node: Node) -> None:
    """Bring the canon in force at `node`, the new head, into the adventure."""
    canon = adventure.canon
    if not canon:
        return
    session = object_session(adventure)
    if session is None:  # pragma: no cover - a head move always runs in a session
        return
    wanted = nearest_update(session, node.id)
    in_force = canon.get("in_force")
    if wanted == in_force:
        return
    versions = dict(canon.get("versions") or {})
    versions[_key(in_force)] = canon_of(adventure)  # as it last was, edits and all
    chosen = versions.get(_key(wanted))
    if chosen is None and wanted is not None:  # (a version not kept: the node's record)
        update = session.get(Node, wanted)
        chosen = ((update.proposal or {}).get("update") or {}).get("after") if update else None
    if chosen is None:
        return  # nothing known to bring: the canon stays as it is
    _put(adventure, chosen)
    adventure.canon = {"in_force": wanted, "versions": versions}


def _key(update: int | None) -> str:
    return BASE if update is None else str(update)


def _put(adventure: Adventure, canon: dict[str, Any]) -> None:
    plot = {k: v for k, v in (adventure.plot or {}).items() if k not in UPDATED_PLOT}
    adventure.plot = {**plot, **(canon.get("plot") or {})}
    adventure.rules = canon.get("rules")


def update_of(node: Node) -> dict[str, Any] | None:
    """What an update step took and found, for its row in the story; None for any other."""
    if node.action_kind != UPDATE:
        return None
    update = (node.proposal or {}).get("update") or {}
    return {
        "scenario": str(update.get("scenario") or ""),
        "took": [PARTS.get(k, k) for k in update.get("took") or []],
        "findings": [str(f) for f in update.get("findings") or []],
    }


def remap(canon: dict[str, Any] | None, nodes: Any) -> dict[str, Any] | None:
    """`canon` with its node ids passed through `nodes` (a bundle's export and import number
    nodes their own way); an id `nodes` does not know drops its version (None for it)."""
    if not canon:
        return None
    in_force = canon.get("in_force")
    versions = {}
    for key, version in (canon.get("versions") or {}).items():
        if key == BASE:
            versions[BASE] = version
        elif str(key).isdigit() and nodes(int(key)) is not None:
            versions[str(nodes(int(key)))] = version
    return {
        "in_force": nodes(in_force) if isinstance(in_force, int) else None,
        "versions": versions,
    }
