"""The JSON API for context and memory: Insights, plot components, story cards, memories.

    GET    /api/adventures/{id}/turns/{node_id}/insights   what was sent for that turn, and why
    GET    /api/adventures/{id}/insights/next              dry run: what would be sent now
    GET    /api/adventures/{id}/plot                       plot components (summary in force)
    PUT    /api/adventures/{id}/plot                       edit any of them
    GET    /api/adventures/{id}/story-cards                the adventure's cards
    POST   /api/adventures/{id}/story-cards                add one
    PUT    /api/adventures/{id}/story-cards/{index}        replace one
    DELETE /api/adventures/{id}/story-cards/{index}        delete one
    GET    /api/adventures/{id}/memories                   the memory panel
    PATCH  /api/adventures/{id}/memories/{memory_id}       edit text, pin, forget / restore
    DELETE /api/adventures/{id}/memories/{memory_id}       delete
    GET    /api/context/settings, PUT /api/context/settings
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import ValidationError

from talekeeper.context import insights
from talekeeper.context.settings import context_settings, update_context_settings
from talekeeper.core import Talekeeper
from talekeeper.memory import panel
from talekeeper.service import plot as plot_service
from talekeeper.service import roles
from talekeeper.service.adventures import get_adventure
from talekeeper.store.models import Node
from talekeeper.story.actions import normalise_action
from talekeeper.web.api import get_tk

router = APIRouter(prefix="/api", tags=["context and memory"])


def turn_insights(tk: Talekeeper, adventure_id: int, node_id: int) -> dict[str, Any]:
    with tk.db.session() as session:
        get_adventure(session, adventure_id)
        node = session.get(Node, node_id)
        if node is None or node.adventure_id != adventure_id:
            raise HTTPException(404, f"No turn {node_id} in this adventure.")
        try:
            assembly, record = insights.load(session, node)
        except insights.InsightsMissing as exc:
            raise HTTPException(404, str(exc)) from exc
        calls = roles.role_calls(session, node_id, adventure_id)  # each other role's prompt (banter)
    request = insights.rebuild_request(assembly, record)
    view = insights.view(assembly, request, record)
    return {"node_id": node_id, "turn": node.depth, **view, "role": record.get("role", "narrator"), "calls": calls}


async def next_insights(tk: Talekeeper, adventure_id: int, kind: str, text: str) -> dict[str, Any]:
    from talekeeper.service.turns import build_context

    kind, text = normalise_action(kind, text)
    prepared = await build_context(tk, adventure_id, kind, text)
    return {
        "node_id": None,
        "turn": prepared.head.depth + 1,
        "dry_run": True,
        **insights.view(prepared.assembly, prepared.request),
    }


@router.get("/adventures/{adventure_id}/turns/{node_id}/insights")
def get_turn_insights(adventure_id: int, node_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Every section sent for this turn: source, text, token cost and why it was included
    (which trigger fired, which memories with what score, how much history fit), and the
    exact prompt, rebuilt and checked against the digest stored when it was sent."""
    return turn_insights(tk, adventure_id, node_id)


@router.get("/adventures/{adventure_id}/insights/next")
async def get_next_insights(
    adventure_id: int,
    kind: Literal["do", "say", "story", "continue"] = Query("continue"),
    text: str = Query("", max_length=4000),
    tk: Talekeeper = Depends(get_tk),
) -> dict[str, Any]:
    """Dry run: what would be sent for this action now. Calls no model and writes nothing."""
    return await next_insights(tk, adventure_id, kind, text)


@router.get("/adventures/{adventure_id}/plot")
def get_plot(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    with tk.db.session() as session:
        return plot_service.plot_view(session, get_adventure(session, adventure_id))


@router.put("/adventures/{adventure_id}/plot")
def put_plot(adventure_id: int, body: plot_service.PlotUpdate, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Edit plot components mid-story. A story summary edit is kept at the current turn and
    is the base of the next automatic update."""
    with tk.locks.hold(adventure_id), tk.db.session() as session:
        return plot_service.update_plot(session, get_adventure(session, adventure_id), body)


@router.get("/adventures/{adventure_id}/story-cards")
def list_cards(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> list[dict[str, Any]]:
    with tk.db.session() as session:
        return plot_service.cards(get_adventure(session, adventure_id))


def _card_write(tk: Talekeeper, adventure_id: int, change) -> Any:
    with tk.locks.hold(adventure_id), tk.db.session() as session:
        return change(get_adventure(session, adventure_id))


@router.post("/adventures/{adventure_id}/story-cards", status_code=201)
def add_card(adventure_id: int, body: plot_service.StoryCard, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    return _card_write(tk, adventure_id, lambda a: plot_service.add_card(a, body))


@router.put("/adventures/{adventure_id}/story-cards/{index}")
def replace_card(
    adventure_id: int, index: int, body: plot_service.StoryCard, tk: Talekeeper = Depends(get_tk)
) -> dict[str, Any]:
    return _card_write(tk, adventure_id, lambda a: plot_service.replace_card(a, index, body))


@router.delete("/adventures/{adventure_id}/story-cards/{index}", status_code=204)
def delete_card(adventure_id: int, index: int, tk: Talekeeper = Depends(get_tk)) -> None:
    _card_write(tk, adventure_id, lambda a: plot_service.delete_card(a, index))


@router.get("/adventures/{adventure_id}/memories")
def get_memories(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """The memories on the path to the head (used / idle / forgotten), the summary in force,
    and the last background run's error, if any."""
    with tk.db.session() as session:
        return panel.panel(session, get_adventure(session, adventure_id))


@router.patch("/adventures/{adventure_id}/memories/{memory_id}")
def patch_memory(
    adventure_id: int, memory_id: int, body: panel.MemoryEdit, tk: Talekeeper = Depends(get_tk)
) -> dict[str, Any]:
    try:
        with tk.locks.hold(adventure_id), tk.db.session() as session:
            return panel.edit(session, get_adventure(session, adventure_id), memory_id, body)
    except panel.MemoryNotFound as exc:
        raise HTTPException(404, str(exc)) from exc


@router.delete("/adventures/{adventure_id}/memories/{memory_id}", status_code=204)
def delete_memory(adventure_id: int, memory_id: int, tk: Talekeeper = Depends(get_tk)) -> None:
    try:
        with tk.locks.hold(adventure_id), tk.db.session() as session:
            panel.delete(session, get_adventure(session, adventure_id), memory_id)
    except panel.MemoryNotFound as exc:
        raise HTTPException(404, str(exc)) from exc


@router.get("/context/settings")
def get_context_settings(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    with tk.db.session() as session:
        return context_settings(session).model_dump()


@router.put("/context/settings")
def put_context_settings(body: dict[str, Any], tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Any subset of the context and memory settings (see the schema of GET)."""
    try:
        with tk.db.session() as session:
            return update_context_settings(session, body).model_dump()
    except ValidationError as exc:
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise HTTPException(422, detail) from exc
