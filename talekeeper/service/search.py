"""Search within a story: the turns on the line being read whose action or narration holds
the words, each with a short excerpt around the first hit.

Only the path root → head is searched (other lines and takes are other stories). The
turns holding the words are read from the text index (`store/text_index`: the story's
turns holding them, whichever line), and kept when they lie on the path, which the redo
chains answer without walking it (`story/chains`). So a search costs its hits, not the
story's length. A query the index cannot narrow (shorter than three characters) or one
so common that the hits pass `CAP` reads the path instead, from the opening down a window
at a time, and stops at the last match it shows.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from talekeeper.errors import Invalid
from talekeeper.service.app import Talekeeper
from talekeeper.service.unit_of_work import get_adventure
from talekeeper.store import text_index
from talekeeper.store.models import Node
from talekeeper.story import chains, tree
from talekeeper.story.actions import format_action
from talekeeper.views.story import Excerpt, SearchMatch, SearchResult

MAX_QUERY = 200
MAX_MATCHES = 100
AROUND = 70  # characters of context either side of the hit
CAP = 2000  # hits read through the index; past it the path is read instead
WINDOW = 500  # turns of the path read at a time when it is read
_COLUMNS = (Node.id, Node.depth, Node.chain, Node.action_kind, Node.action_text, Node.narration)


class SearchInvalid(Invalid):
    pass


def excerpt(text: str, query: str) -> Excerpt | None:
    """The text around the first (case-insensitive) hit, split so a page can mark it."""
    at = text.lower().find(query.lower())
    if at < 0:
        return None
    start, end = max(0, at - AROUND), min(len(text), at + len(query) + AROUND)
    return Excerpt(
        before=("…" if start else "") + text[start:at],
        match=text[at : at + len(query)],
        after=text[at + len(query) : end] + ("…" if end < len(text) else ""),
    )


def search_story(tk: Talekeeper, adventure_id: int, query: str) -> SearchResult:
    query = " ".join((query or "").split())
    if len(query) > MAX_QUERY:
        raise SearchInvalid(f"Search for at most {MAX_QUERY} characters.")
    if query:
        with tk.db.session() as session:  # (SQLite) its turns entered in the index first
            adventure = get_adventure(session, adventure_id)
            text_index.bring_up_to_date(session, adventure.id, adventure.pending_turn_id)
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        if not query:
            return SearchResult(query=query, matches=[], more=False, title=adventure.title)
        rows = _on_path(session, adventure, query)
        matches = []
        for row in rows[:MAX_MATCHES]:
            action_line = format_action(row.action_kind, row.action_text)
            hit = excerpt(row.narration, query) or excerpt(action_line or row.action_text, query)
            matches.append(
                SearchMatch(id=row.id, turn=row.depth, action_line=action_line, excerpt=hit)
            )
        return SearchResult(
            query=query, matches=matches, more=len(rows) > MAX_MATCHES, title=adventure.title
        )


def _on_path(session: Any, adventure: Any, query: str) -> list[Any]:
    """The turns on the path to the head holding `query`, in story order: all of them, or
    the first `MAX_MATCHES` and one more (there are more)."""
    head = tree.head(session, adventure)
    path = chains.segments(session, head)
    found = text_index.hits(session, adventure.id, query, _COLUMNS, CAP)
    if found is not None and len(found) < CAP:
        rows = [r for r in found if chains.on_path(path, r.chain, r.depth)]
        return sorted(rows, key=lambda r: r.depth)
    rows = []
    for first in range(0, head.depth + 1, WINDOW):
        ids = chains.ids_on(session, adventure.id, path, first, first + WINDOW - 1)
        rows += sorted(
            session.execute(select(*_COLUMNS).where(Node.id.in_(ids), text_index.holds(query))),
            key=lambda r: r.depth,
        )
        if len(rows) > MAX_MATCHES:
            break
    return rows
