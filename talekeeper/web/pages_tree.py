"""Play-page controls for the story tree (HTMX fragments): takes, edits, lines, Save Points.

Retry and an edited action stream through the JSON API (`play.js`); everything here is
immediate. A change made from a panel answers with the panel and the `story-changed`
trigger, so the story on the page reloads itself. A refusal is shown where it happened.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse

from talekeeper.service import adventures, story_map, tree_ops, unit_of_work
from talekeeper.service.adventures import PageAnswer, Shown
from talekeeper.service.app import Talekeeper
from talekeeper.service.locks import AdventureBusy
from talekeeper.story.tree import TreeError
from talekeeper.web import turns
from talekeeper.web.deps import get_tk
from talekeeper.web.render import render

router = APIRouter(prefix="/adventures/{adventure_id}/tree", include_in_schema=False)
REFUSALS = (TreeError, AdventureBusy, unit_of_work.AdventureNotFound)
STORY_CHANGED = {"HX-Trigger": "story-changed"}


def _story(
    request: Request,
    tk: Talekeeper,
    adventure_id: int,
    change: Callable[[Shown], PageAnswer],
    shown: Shown | None = None,
) -> HTMLResponse:
    """Make a change that moves the story and answer with what changed on the page showing
    `shown` (without: the story drawn afresh), or why not."""
    shown = shown or Shown()
    message = None
    try:
        answer = change(shown)
    except REFUSALS as exc:
        answer, message = adventures.story_for_page(tk, adventure_id, shown), str(exc)
    return turns.story_response(request, answer, message)


def _panel(
    request: Request,
    tk: Talekeeper,
    adventure_id: int,
    name: str,
    change: Callable[[], Any] | None = None,
    moves_story: bool = False,
) -> HTMLResponse:
    message = None
    if change is not None:
        try:
            change()
        except REFUSALS as exc:
            message, moves_story = str(exc), False
    if name == "_lines.html":
        context = dict(
            story_map.line_tree(tk, adventure_id)
        )  # the lines in tree order, for the map
    else:
        context = dict(tree_ops.list_save_points(tk, adventure_id))
    response = render(request, name, adventure_id=adventure_id, message=message, **context)
    if moves_story:
        response.headers.update(STORY_CHANGED)
    return response


# --- takes and edits -------------------------------------------------------------------------


@router.post("/turns/{node_id}/choose", response_class=HTMLResponse)
def choose_take(
    request: Request,
    adventure_id: int,
    node_id: int,
    shown_head: int | None = Form(None),
    shown_first: int | None = Form(None),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    change = partial(tree_ops.choose_take, tk, adventure_id, node_id)
    return _story(request, tk, adventure_id, change, Shown(shown_head, shown_first))


@router.post("/turns/{node_id}/delete", response_class=HTMLResponse)
def delete_turn(
    request: Request, adventure_id: int, node_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    """Delete the turn being read when nothing follows it; the story drawn afresh."""
    change = partial(tree_ops.delete_turn, tk, adventure_id, node_id)
    return _story(request, tk, adventure_id, change, Shown())


@router.get("/turns/{node_id}/edit", response_class=HTMLResponse)
def edit_form(
    request: Request, adventure_id: int, node_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    turn = adventures.turn(tk, adventure_id, node_id)
    return render(request, "_edit_turn.html", adventure_id=adventure_id, t=turn)


@router.post("/turns/{node_id}/edit", response_class=HTMLResponse)
def edit_narration(
    request: Request,
    adventure_id: int,
    node_id: int,
    narration: str = Form(""),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    # Drawn afresh: an edit of the opening changes a turn the page keeps.
    change = partial(tree_ops.edit_narration, tk, adventure_id, node_id, narration)
    return _story(request, tk, adventure_id, lambda _: change(Shown()))


# --- lines -------------------------------------------------------------------------------------


@router.get("/lines", response_class=HTMLResponse)
def lines(request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    return _panel(request, tk, adventure_id, "_lines.html")


@router.post("/lines/{leaf_id}/switch", response_class=HTMLResponse)
def switch_line(
    request: Request, adventure_id: int, leaf_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    change = partial(tree_ops.switch_line, tk, adventure_id, leaf_id, answer=False)
    return _panel(request, tk, adventure_id, "_lines.html", change, moves_story=True)


@router.post("/lines/{leaf_id}/rename", response_class=HTMLResponse)
def rename_line(
    request: Request,
    adventure_id: int,
    leaf_id: int,
    name: str = Form(""),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    change = partial(tree_ops.rename_line, tk, adventure_id, leaf_id, name)
    return _panel(request, tk, adventure_id, "_lines.html", change, moves_story=True)


@router.post("/lines/{leaf_id}/delete", response_class=HTMLResponse)
def delete_line(
    request: Request, adventure_id: int, leaf_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    change = partial(tree_ops.delete_line, tk, adventure_id, leaf_id)
    return _panel(request, tk, adventure_id, "_lines.html", change, moves_story=True)


# --- Save Points -------------------------------------------------------------------------------


@router.get("/save-points", response_class=HTMLResponse)
def save_points(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    return _panel(request, tk, adventure_id, "_save_points.html")


@router.post("/save-points", response_class=HTMLResponse)
def create_save_point(
    request: Request,
    adventure_id: int,
    name: str = Form(""),
    note: str = Form(""),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    change = partial(tree_ops.create_save_point, tk, adventure_id, name, note)
    return _panel(request, tk, adventure_id, "_save_points.html", change)


@router.post("/save-points/{save_point_id}/restore", response_class=HTMLResponse)
def restore_save_point(
    request: Request, adventure_id: int, save_point_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    change = partial(tree_ops.restore_save_point, tk, adventure_id, save_point_id, answer=False)
    return _panel(request, tk, adventure_id, "_save_points.html", change, moves_story=True)


@router.post("/save-points/{save_point_id}/rename", response_class=HTMLResponse)
def rename_save_point(
    request: Request,
    adventure_id: int,
    save_point_id: int,
    name: str = Form(""),
    note: str | None = Form(None),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    change = partial(tree_ops.rename_save_point, tk, adventure_id, save_point_id, name, note)
    return _panel(request, tk, adventure_id, "_save_points.html", change)


@router.post("/save-points/{save_point_id}/delete", response_class=HTMLResponse)
def delete_save_point(
    request: Request, adventure_id: int, save_point_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    change = partial(tree_ops.delete_save_point, tk, adventure_id, save_point_id)
    return _panel(request, tk, adventure_id, "_save_points.html", change)
