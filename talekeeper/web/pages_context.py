"""Pages for context and memory: Insights, the memory panel, story cards, plot components.

Plain forms that post and redirect back (they work without JavaScript); each calls the
same services as `api_context.py`. POST paths have two segments after the adventure id so
they never collide with the play page's `/adventures/{id}/{move}`.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from talekeeper.core import Talekeeper
from talekeeper.memory import panel
from talekeeper.service import plot as plot_service
from talekeeper.service.adventures import AdventureNotFound, get_adventure
from talekeeper.service.locks import AdventureBusy
from talekeeper.story.actions import ActionError
from talekeeper.web import flash
from talekeeper.web.api import get_tk
from talekeeper.web.api_context import next_insights, turn_insights
from talekeeper.web.card_form import card_from_form
from talekeeper.web.pages import render  # one template environment: shared filters
from talekeeper.web.pages_state import turn_proposal

router = APIRouter(include_in_schema=False)


def _title(tk: Talekeeper, adventure_id: int) -> str:
    with tk.db.session() as session:
        return get_adventure(session, adventure_id).title


def _back(path: str, message: str | None = None) -> RedirectResponse:
    return flash.redirect(path, message)


@router.get("/adventures/{adventure_id}/insights", response_class=HTMLResponse)
async def insights_page(
    request: Request,
    adventure_id: int,
    turn: int | None = None,
    kind: Literal["do", "say", "story", "continue"] = "continue",
    text: str = Query("", max_length=4000),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    """Insights for a past turn (?turn=<node id>), or for what would be sent next
    (optionally for an action: ?kind=do&text=…)."""
    error = proposal = None
    try:
        data = turn_insights(tk, adventure_id, turn) if turn else await next_insights(tk, adventure_id, kind, text)
        proposal = turn_proposal(tk, adventure_id, turn) if turn else None
    except HTTPException as exc:
        data, error = None, exc.detail
    except ActionError as exc:
        data, error = None, str(exc)
    return render(
        request,
        "insights.html",
        status_code=404 if error else 200,
        adventure_id=adventure_id,
        title=_title(tk, adventure_id),
        data=data,
        error=error,
        recent=_recent_turns(tk, adventure_id),
        current=turn,
        proposal=proposal,
        kind=kind,
        text=text,
    )


def _recent_turns(tk: Talekeeper, adventure_id: int, count: int = 30) -> list[tuple[int, int]]:
    """(node id, turn number) of the latest turns on the path to the head, newest first."""
    from talekeeper.memory.bank import path_ids

    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        ids = path_ids(session, adventure.head_node_id) if adventure.head_node_id else []
    return [(node_id, depth) for depth, node_id in list(enumerate(ids))[::-1][:count] if depth > 0]


@router.get("/adventures/{adventure_id}/memory", response_class=HTMLResponse)
def memory_page(request: Request, adventure_id: int, message: str | None = None, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        data = panel.panel(session, adventure)
        title = adventure.title
    return render(request, "memory.html", adventure_id=adventure_id, title=title, data=data, message=message)


@router.post("/adventures/{adventure_id}/memory/{memory_id}")
async def memory_action(request: Request, adventure_id: int, memory_id: int, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    action = str(form.get("action", ""))
    back = f"/adventures/{adventure_id}/memory"
    changes = {
        "pin": {"pinned": True},
        "unpin": {"pinned": False},
        "forget": {"forgotten": True},
        "restore": {"forgotten": False},
        "save": {"text": str(form.get("text", ""))},
    }
    try:
        with tk.locks.hold(adventure_id), tk.db.session() as session:
            adventure = get_adventure(session, adventure_id)
            if action == "delete":
                panel.delete(session, adventure, memory_id)
            elif action in changes:
                panel.edit(session, adventure, memory_id, panel.MemoryEdit(**changes[action]))
            else:
                return _back(back, "Unknown action.")
    except (panel.MemoryNotFound, ValidationError, AdventureBusy) as exc:
        return _back(back, str(exc).splitlines()[0])
    return _back(back)


@router.get("/adventures/{adventure_id}/cards", response_class=HTMLResponse)
def cards_page(request: Request, adventure_id: int, message: str | None = None, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        cards = plot_service.cards(adventure)
        title = adventure.title
    blank = plot_service.StoryCard().view()
    return render(request, "cards.html", adventure_id=adventure_id, title=title, cards=cards, message=message, blank_card=blank)


def _card_from(form: Any) -> plot_service.StoryCard:
    return plot_service.StoryCard.model_validate(card_from_form(form))


@router.post("/adventures/{adventure_id}/cards/{index}")
async def card_action(request: Request, adventure_id: int, index: str, tk: Talekeeper = Depends(get_tk)) -> Response:
    """`index` is a card's position, or `new` to add one."""
    form = await request.form()
    back = f"/adventures/{adventure_id}/cards"
    try:
        with tk.locks.hold(adventure_id), tk.db.session() as session:
            adventure = get_adventure(session, adventure_id)
            if index == "new":
                plot_service.add_card(adventure, _card_from(form))
            elif form.get("action") == "delete":
                plot_service.delete_card(adventure, int(index))
            else:
                plot_service.replace_card(adventure, int(index), _card_from(form))
    except AdventureNotFound:
        raise
    except (plot_service.ContextError, plot_service.CardNotFound, ValidationError, ValueError, AdventureBusy) as exc:
        return _back(back, str(exc).splitlines()[0])
    return _back(back, "Saved.")


@router.get("/adventures/{adventure_id}/plot", response_class=HTMLResponse)
def plot_page(request: Request, adventure_id: int, message: str | None = None, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        data = plot_service.plot_view(session, adventure)
        title = adventure.title
    return render(request, "plot.html", adventure_id=adventure_id, title=title, plot=data, message=message)


@router.post("/adventures/{adventure_id}/plot/save")
async def plot_save(request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    back = f"/adventures/{adventure_id}/plot"
    try:
        update = plot_service.PlotUpdate(
            **{name: str(form.get(name, "")) for name in (*plot_service.TEXT_FIELDS, "story_summary")},
            persona=plot_service.Persona(
                name=str(form.get("persona_name", "")),
                pronouns=str(form.get("persona_pronouns", "")),
                description=str(form.get("persona_description", "")),
            ),
        )
        with tk.locks.hold(adventure_id), tk.db.session() as session:
            plot_service.update_plot(session, get_adventure(session, adventure_id), update)
    except (ValidationError, AdventureBusy) as exc:
        return _back(back, str(exc).splitlines()[0])
    return _back(back, "Saved.")
