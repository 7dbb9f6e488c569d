"""Pages for context and memory: Insights, the memory panel, story cards, plot components,
and the update from the scenario (its preview, then the parts the player takes).

Plain forms that post and redirect back (they work without JavaScript); each calls the
same services as `api_context.py`. POST paths have two segments after the adventure id so
they never collide with the play page's `/adventures/{id}/{move}`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from talekeeper.errors import Conflict, Invalid, NotFound
from talekeeper.service import adventures, corrections, hand, insights, memories, scenario_update
from talekeeper.service import plot as plot_service
from talekeeper.service.app import Talekeeper
from talekeeper.service.unit_of_work import AdventureNotFound
from talekeeper.story.actions import ActionKind, RetoldKind
from talekeeper.web import flash
from talekeeper.web.card_form import card_from_form
from talekeeper.web.deps import get_tk
from talekeeper.web.render import render

router = APIRouter(include_in_schema=False)


def _title(tk: Talekeeper, adventure_id: int) -> str:
    return adventures.title_of(tk, adventure_id)


def _back(path: str, message: str | None = None) -> RedirectResponse:
    return flash.redirect(path, message)


@router.get("/adventures/{adventure_id}/insights", response_class=HTMLResponse)
async def insights_page(
    request: Request,
    adventure_id: int,
    turn: int | None = None,
    kind: RetoldKind = ActionKind.CONTINUE,
    text: str = Query("", max_length=4000),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    """Insights for a past turn (?turn=<node id>), or for what would be sent next
    (optionally for an action: ?kind=do&text=…)."""
    error = proposal = None
    try:
        data = (  # the API's own view
            insights.of_turn(tk, adventure_id, turn)
            if turn
            else await insights.of_next(tk, adventure_id, kind, text)
        )
        proposal = corrections.turn_proposal(tk, adventure_id, turn) if turn else None
    except (NotFound, Invalid) as exc:  # no such turn or no stored Insights; a refused action
        # (a missing adventure is refused below, by the title lookup: 404)
        data, error = None, str(exc)
    return render(
        request,
        "insights.html",
        status_code=404 if error else 200,
        adventure_id=adventure_id,
        title=_title(tk, adventure_id),
        data=data,
        error=error,
        recent=insights.recent_turns(tk, adventure_id),
        current=turn,
        proposal=proposal,
        kind=kind,
        text=text,
        hand_calls=[] if turn else hand.recent_calls(tk, adventure_id),
    )


@router.get("/adventures/{adventure_id}/insights/audit", response_class=HTMLResponse)
def audit_page(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    """The audit trail, in Insights with the rest of what the model wrote: every proposal on
    the line being read, newest first — raw text, parse errors, verdicts."""
    trail = corrections.audit(tk, adventure_id, limit=100)
    return render(
        request,
        "audit.html",
        adventure_id=adventure_id,
        title=_title(tk, adventure_id),
        trail=trail,
        recent=insights.recent_turns(tk, adventure_id),
    )


@router.get("/adventures/{adventure_id}/memory", response_class=HTMLResponse)
def memory_page(
    request: Request,
    adventure_id: int,
    message: str | None = None,
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    data = memories.panel_of(tk, adventure_id)  # the API's own view
    title = _title(tk, adventure_id)
    return render(
        request, "memory.html", adventure_id=adventure_id, title=title, data=data, message=message
    )


@router.post("/adventures/{adventure_id}/memory/new")
async def memory_new(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> Response:
    """A memory the player writes, at the moment being read."""
    form = await request.form()
    back = f"/adventures/{adventure_id}/memory"
    try:
        new = memories.MemoryNew(text=str(form.get("text", "")), pinned=bool(form.get("pinned")))
        memories.add(tk, adventure_id, new)
    except (ValidationError, ValueError, Conflict):
        return _back(back, "Nothing was saved: write what to remember (at most 2,000 characters).")
    return _back(back, "Remembered. It belongs to this moment of the story.")


@router.post("/adventures/{adventure_id}/memory/switch")
async def memory_switch(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> Response:
    """This adventure's memory bank on or off."""
    on = str((await request.form()).get("on", "")) == "1"
    try:
        memories.switch(tk, adventure_id, on)
    except Conflict as exc:
        return _back(f"/adventures/{adventure_id}/memory", str(exc).splitlines()[0])
    said = "on: memories are written and sent" if on else "off: nothing is written or sent"
    return _back(f"/adventures/{adventure_id}/memory", f"This adventure's memory bank is {said}.")


@router.post("/adventures/{adventure_id}/memory/{memory_id}")
async def memory_action(
    request: Request, adventure_id: int, memory_id: int, tk: Talekeeper = Depends(get_tk)
) -> Response:
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
        if action == "delete":
            memories.delete(tk, adventure_id, memory_id)
        elif action in changes:
            memories.edit(tk, adventure_id, memory_id, memories.MemoryEdit(**changes[action]))
        else:
            return _back(back, "Unknown action.")
    except AdventureNotFound:
        raise
    except (memories.MemoryNotFound, ValidationError, Conflict) as exc:
        return _back(back, str(exc).splitlines()[0])
    return _back(back)


@router.get("/adventures/{adventure_id}/cards", response_class=HTMLResponse)
def cards_page(
    request: Request,
    adventure_id: int,
    message: str | None = None,
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    cards = plot_service.cards_of(tk, adventure_id)
    title = _title(tk, adventure_id)
    blank = plot_service.StoryCard().view()
    return render(
        request,
        "cards.html",
        adventure_id=adventure_id,
        title=title,
        cards=cards,
        message=message,
        blank_card=blank,
    )


def _card_from(form: Any) -> plot_service.StoryCard:
    return plot_service.StoryCard.model_validate(card_from_form(form))


@router.post("/adventures/{adventure_id}/cards/{index}")
async def card_action(
    request: Request, adventure_id: int, index: str, tk: Talekeeper = Depends(get_tk)
) -> Response:
    """`index` is a card's position, or `new` to add one."""
    form = await request.form()
    back = f"/adventures/{adventure_id}/cards"
    try:
        if index == "new":
            plot_service.add_card_to(tk, adventure_id, _card_from(form))
        elif form.get("action") == "delete":
            plot_service.delete_card_from(tk, adventure_id, int(index))
        else:
            plot_service.replace_card_in(tk, adventure_id, int(index), _card_from(form))
    except AdventureNotFound:
        raise
    except (
        plot_service.CardNotFound,
        ValidationError,
        ValueError,
        Conflict,
    ) as exc:  # Invalid is a ValueError
        return _back(back, str(exc).splitlines()[0])
    return _back(back, "Saved.")


@router.get("/adventures/{adventure_id}/plot", response_class=HTMLResponse)
def plot_page(
    request: Request,
    adventure_id: int,
    message: str | None = None,
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    data = plot_service.plot_of(tk, adventure_id)  # the API's own view
    title = _title(tk, adventure_id)
    return render(
        request, "plot.html", adventure_id=adventure_id, title=title, plot=data, message=message
    )


@router.post("/adventures/{adventure_id}/plot/save")
async def plot_save(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> Response:
    form = await request.form()
    back = f"/adventures/{adventure_id}/plot"
    try:
        update = plot_service.PlotUpdate(
            **{
                name: str(form.get(name, ""))
                for name in (*plot_service.TEXT_FIELDS, "story_summary")
            },
            persona=plot_service.Persona(
                name=str(form.get("persona_name", "")),
                pronouns=str(form.get("persona_pronouns", "")),
                description=str(form.get("persona_description", "")),
            ),
        )
        plot_service.edit_plot(tk, adventure_id, update)
    except (ValidationError, Conflict) as exc:
        return _back(back, str(exc).splitlines()[0])
    return _back(back, "Saved.")


@router.get("/adventures/{adventure_id}/scenario-update", response_class=HTMLResponse)
def scenario_update_page(
    request: Request,
    adventure_id: int,
    message: str | None = None,
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    """The preview of an update from the scenario: each part, what would change, and what of
    the story's state no longer fits; the player checks the parts to take."""
    try:
        preview = scenario_update.preview(tk, adventure_id)
    except scenario_update.ScenarioGone as exc:
        return _back(f"/adventures/{adventure_id}/plot", str(exc))
    return render(
        request,
        "scenario_update.html",
        adventure_id=adventure_id,
        title=_title(tk, adventure_id),
        preview=preview,
        message=message,
    )


@router.post("/adventures/{adventure_id}/scenario-update/take")
async def scenario_update_take(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> Response:
    form = await request.form()
    take = [str(v) for v in form.getlist("take")]
    try:
        done = scenario_update.update(tk, adventure_id, take)
    except (Conflict, Invalid) as exc:
        return _back(f"/adventures/{adventure_id}/scenario-update", str(exc))
    said = "Updated from the scenario: " + ", ".join(done.took) + ". Undo takes it back."
    return _back(f"/adventures/{adventure_id}", said)
