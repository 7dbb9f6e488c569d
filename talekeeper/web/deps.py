"""What every route is handed: the application object the app was created with; and, for
the API's changes that move the story, which turns the client shows."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from talekeeper.errors import Invalid
from talekeeper.service.adventures import Shown
from talekeeper.service.app import Talekeeper


def get_tk(request: Request) -> Talekeeper:
    return request.app.state.tk


Tk = Annotated[Talekeeper, Depends(get_tk)]  # a route's parameter, written short


def shown_turns(
    shown_head: int | None = Query(
        None, description="The last turn you show: with `shown_first`, answered with a delta."
    ),
    shown_first: int | None = Query(None, description="The first turn you show."),
) -> Shown | None:
    """Which turns the client shows (both or neither): an undo, a redo or a take step then
    answers with what changed for it (`StoryDelta`) instead of the whole story."""
    if (shown_head is None) != (shown_first is None):
        raise Invalid("Send both shown_head and shown_first (or neither, for the whole story).")
    return None if shown_head is None else Shown(shown_head, shown_first)
