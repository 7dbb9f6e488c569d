"""Search within a story: the turns on the line being read whose action or narration holds
the words, each with a short excerpt around the first hit.

Only the path root → head is searched (other lines and takes are other stories). The path
is one recursive read; the text is matched by SQLite in chunks of ids, and only the
matching rows are loaded, so a long story costs one pass over its path.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_, select

from talekeeper.errors import Invalid
from talekeeper.service.app import Talekeeper
from talekeeper.service.unit_of_work import get_adventure
from talekeeper.store.models import Node
from talekeeper.story import tree
from talekeeper.story.actions import format_action

MAX_QUERY = 200
MAX_MATCHES = 100
AROUND = 70  # characters of context either side of the hit
_CHUNK = 500


class SearchInvalid(Invalid):
    pass


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def excerpt(text: str, query: str) -> dict[str, str] | None:
    """The text around the first (case-insensitive) hit, split so a page can mark it."""
    at = text.lower().find(query.lower())
    if at < 0:
        return None
    start, end = max(0, at - AROUND), min(len(text), at + len(query) + AROUND)
    return {
        "before": ("…" if start else "") + text[start:at],
        "match": text[at : at + len(query)],
        "after": text[at + len(query) : end] + ("…" if end < len(text) else ""),
    }


def search_story(tk: Talekeeper, adventure_id: int, query: str) -> dict[str, Any]:
    query = " ".join((query or "").split())
    if len(query) > MAX_QUERY:
        raise SearchInvalid(f"Search for at most {MAX_QUERY} characters.")
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        result: dict[str, Any] = {
            "query": query,
            "matches": [],
            "more": False,
            "title": adventure.title,
        }
        if not query:
            return result
        ids = tree.path_ids(session, tree.head(session, adventure))
        pattern = _like(query)
        rows = []
        for i in range(0, len(ids), _CHUNK):
            rows += session.execute(
                select(
                    Node.id, Node.depth, Node.action_kind, Node.action_text, Node.narration
                ).where(
                    Node.id.in_(ids[i : i + _CHUNK]),
                    or_(
                        Node.narration.ilike(pattern, escape="\\"),
                        Node.action_text.ilike(pattern, escape="\\"),
                    ),
                )
            ).all()
        rows.sort(key=lambda r: r.depth)
        for row in rows[:MAX_MATCHES]:
            action_line = format_action(row.action_kind, row.action_text)
            hit = excerpt(row.narration, query) or excerpt(action_line or row.action_text, query)
            result["matches"].append(
                {"id": row.id, "turn": row.depth, "action_line": action_line, "excerpt": hit}
            )
        result["more"] = len(rows) > MAX_MATCHES
        return result
