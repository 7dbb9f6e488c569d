"""The story on the play page: each turn's HTML rendered once and kept, and the answers
that let the page patch itself instead of drawing the story again.

A turn's HTML is a function of its view (itself a function of its immutable node:
`adventures.turn_key` — or of a pending node, completed once: `pending`), its place among its takes, the adventure's id, whether the
opening may still be edited, and the templates that draw it — exactly the cache's key. The
turn template is given nothing else: its `story` is a `TurnPage`, which refuses any other
attribute, so a template that starts to read more fails loudly here (add it to the key)
instead of serving a stale turn. The templates' version is the digest of their sources
(they are not reloaded while the app runs); the code that renders them changes only with
a restart, which empties the cache.

After an undo, a redo, a take step or a turn, the page says what it shows (its first and
last turn, `Shown`) and is answered with what changed (`adventures.story_change`): the
shown turns below the turn both lines share are deleted, the turns that follow it now are
put in before the controls, and the controls are replaced — HTMX out-of-band swaps, with
the main swap turned off (`HX-Reswap: none`). The `story-patched` event follows, so the
page can refresh an open panel. A page that cannot be patched (it shows none of the line
now read) is answered with the story, drawn afresh.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import meta
from markupsafe import Markup

from talekeeper.service.adventures import PageAnswer, TurnKey
from talekeeper.views.story import StoryTurn
from talekeeper.web.render import render, templates

TURN_TEMPLATE = "_turn.html"
KEPT_TURNS = 4096
PATCHED = {"HX-Reswap": "none", "HX-Trigger-After-Settle": "story-patched"}

_kept: OrderedDict[tuple[Any, ...], Markup] = OrderedDict()
_lock = threading.Lock()


def _templates_version(name: str) -> str:
    """A digest of `name`'s source and of every template it includes, transitively."""
    digest, seen, todo = hashlib.sha256(), set(), [name]
    loader = templates.env.loader
    assert loader is not None
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        source = loader.get_source(templates.env, current)[0]
        digest.update(current.encode() + b"\0" + source.encode() + b"\0")
        todo += [n for n in meta.find_referenced_templates(templates.env.parse(source)) if n]
    return digest.hexdigest()[:16]


VERSION = _templates_version(TURN_TEMPLATE)


class TurnContextMissing(RuntimeError):
    """The turn template read something its cache key does not hold."""


class TurnPage:
    """What the turn template may read of the story besides its turn: the adventure's id,
    and whether the opening may still be edited."""

    __slots__ = ("id", "opening_editable")

    def __init__(self, adventure_id: int, opening_editable: bool) -> None:
        self.id = adventure_id
        self.opening_editable = opening_editable

    def __getattr__(self, name: str) -> Any:
        raise TurnContextMissing(
            f"_turn.html read story.{name}, which the kept turns' key does not hold: add it "
            "to TurnPage and to the key in talekeeper/web/turns.py"
        )


def turns_html(
    adventure_id: int,
    opening_editable: bool,
    views: Sequence[StoryTurn],
    keys: Sequence[TurnKey],
) -> Markup:
    """The turns' HTML, each from the kept copy when there is one."""
    page = TurnPage(adventure_id, opening_editable)
    template = None
    parts = []
    for view, key in zip(views, keys, strict=True):
        takes = view.takes
        kept_key = (
            VERSION,
            key,
            (takes.index, takes.count, takes.previous_id, takes.next_id),
            adventure_id,
            opening_editable if view.parent_id is None else None,
            view.pending,  # its background step still running (service/settling)
        )
        with _lock:
            html = _kept.get(kept_key)
            if html is not None:
                _kept.move_to_end(kept_key)
        if html is None:
            template = template or templates.env.get_template(TURN_TEMPLATE)
            html = Markup(template.render(t=view, story=page))
            with _lock:
                _kept[kept_key] = html
                while len(_kept) > KEPT_TURNS:
                    _kept.popitem(last=False)
        parts.append(html)
    return Markup("").join(parts)


def story_response(
    request: Request, answer: PageAnswer, message: str | None = None, older: bool = False
) -> HTMLResponse:
    """The answer to the play page: the patch when there is one, else the story (or, with
    `older`, the page of earlier turns) drawn from its kept turns."""
    if answer.change is not None:
        change = answer.change
        story = change.story
        response = render(
            request,
            "_story_patch.html",
            story=story,
            removed=change.removed,
            turns=turns_html(
                story.id, bool(story.opening_editable), change.added, change.added_keys
            ),
            last_kind=change.head_kind,
            message=message,
        )
        response.headers.update(PATCHED)
        return response
    name = "_older.html" if older else "_story.html"
    return render(request, name, message=message, **drawn(answer))


def drawn(answer: PageAnswer) -> dict[str, Any]:
    """What `_story.html` draws the story from: the story's view (without its turns), the
    turns' HTML, and the first turn's id and the last one's kind."""
    assert answer.story is not None  # (no change to patch: the story drawn afresh)
    shown, keys = answer.story.turns_shown, answer.keys or []
    story = answer.story.model_copy(update={"turns_shown": []})
    return {
        "story": story,
        "turns": turns_html(story.id, bool(story.opening_editable), shown, keys),
        "first_id": shown[0].id if shown else None,
        "last_kind": shown[-1].kind if shown else None,
    }
