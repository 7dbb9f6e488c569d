"""The JSON API for context and memory: Insights, plot components, story cards, memories.

GET    /api/adventures/{id}/turns/{node_id}/insights   what was sent for that turn, and why
GET    /api/adventures/{id}/insights/next              dry run: what would be sent now
GET    /api/adventures/{id}/plot                       plot components (summary in force)
PUT    /api/adventures/{id}/plot                       edit any of them
GET    /api/adventures/{id}/scenario-update            what the scenario's newer version would change
POST   /api/adventures/{id}/scenario-update            take it, as one step of the story
GET    /api/adventures/{id}/story-cards                the adventure's cards
POST   /api/adventures/{id}/story-cards                add one
PUT    /api/adventures/{id}/story-cards/{index}        replace one
DELETE /api/adventures/{id}/story-cards/{index}        delete one
GET    /api/adventures/{id}/memories                   the memory panel
PATCH  /api/adventures/{id}/memories/{memory_id}       edit text, pin, forget / restore
DELETE /api/adventures/{id}/memories/{memory_id}       delete
POST   /api/adventures/{id}/memories                   write a memory by hand
PUT    /api/adventures/{id}/memory-bank                this adventure's memory bank on or off
GET    /api/context/settings, PUT /api/context/settings
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from talekeeper.context.settings import ContextSettings
from talekeeper.service import insights, memories, scenario_update
from talekeeper.service import plot as plot_service
from talekeeper.service import settings as settings_service
from talekeeper.service.app import Talekeeper
from talekeeper.story.actions import ActionKind, RetoldKind
from talekeeper.views import context as views
from talekeeper.views import state as state_views
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS

router = APIRouter(prefix="/api", tags=["context and memory"], responses=ERRORS)


@router.get("/adventures/{adventure_id}/turns/{node_id}/insights", response_model=views.Insights)
def get_turn_insights(
    adventure_id: int, node_id: int, tk: Talekeeper = Depends(get_tk)
) -> views.Insights:
    """Every section sent for this turn: source, text, token cost and why it was included
    (which trigger fired, which memories with what score, how much history fit), and the
    exact prompt, rebuilt and checked against the digest stored when it was sent."""
    return insights.of_turn(tk, adventure_id, node_id)


@router.get("/adventures/{adventure_id}/insights/next", response_model=views.Insights)
async def get_next_insights(
    adventure_id: int,
    kind: RetoldKind = Query(ActionKind.CONTINUE),
    text: str = Query("", max_length=4000),
    tk: Talekeeper = Depends(get_tk),
) -> views.Insights:
    """Dry run: what would be sent for this action now. Calls no model and writes nothing."""
    return await insights.of_next(tk, adventure_id, kind, text)


@router.get("/adventures/{adventure_id}/plot", response_model=views.Plot)
def get_plot(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> views.Plot:
    return plot_service.plot_of(tk, adventure_id)


@router.put("/adventures/{adventure_id}/plot", response_model=views.Plot)
def put_plot(
    adventure_id: int, body: plot_service.PlotUpdate, tk: Talekeeper = Depends(get_tk)
) -> views.Plot:
    """Edit plot components mid-story. A story summary edit is kept at the current turn and
    is the base of the next automatic update."""
    return plot_service.edit_plot(tk, adventure_id, body)


@router.get(
    "/adventures/{adventure_id}/scenario-update", response_model=state_views.ScenarioUpdatePreview
)
def get_scenario_update(
    adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> state_views.ScenarioUpdatePreview:
    """What taking the scenario's newer texts, cards and rules would change, part by part,
    and what of the story's state no longer fits them. Writes nothing."""
    return scenario_update.preview(tk, adventure_id)


class TakeParts(BaseModel):
    take: list[str] | None = Field(
        None,
        max_length=8,
        description="The parts to take (their `key` in the preview); omitted: every part that changed.",
    )


@router.post(
    "/adventures/{adventure_id}/scenario-update", response_model=state_views.ScenarioUpdated
)
def post_scenario_update(
    adventure_id: int, body: TakeParts | None = None, tk: Talekeeper = Depends(get_tk)
) -> state_views.ScenarioUpdated:
    """Take the scenario's newer parts as one step of the story (Undo takes it back, the
    canon with it); 409 when nothing would change, 404 when the scenario is gone."""
    return scenario_update.update(tk, adventure_id, body.take if body else None)


@router.get("/adventures/{adventure_id}/story-cards", response_model=list[views.StoryCardView])
def list_cards(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> list[views.StoryCardView]:
    return plot_service.cards_of(tk, adventure_id)


@router.post(
    "/adventures/{adventure_id}/story-cards", status_code=201, response_model=views.StoryCardView
)
def add_card(
    adventure_id: int, body: plot_service.StoryCard, tk: Talekeeper = Depends(get_tk)
) -> views.StoryCardView:
    return plot_service.add_card_to(tk, adventure_id, body)


@router.put("/adventures/{adventure_id}/story-cards/{index}", response_model=views.StoryCardView)
def replace_card(
    adventure_id: int, index: int, body: plot_service.StoryCard, tk: Talekeeper = Depends(get_tk)
) -> views.StoryCardView:
    return plot_service.replace_card_in(tk, adventure_id, index, body)


@router.delete("/adventures/{adventure_id}/story-cards/{index}", status_code=204)
def delete_card(adventure_id: int, index: int, tk: Talekeeper = Depends(get_tk)) -> None:
    plot_service.delete_card_from(tk, adventure_id, index)


@router.get("/adventures/{adventure_id}/memories", response_model=views.MemoryPanel)
def get_memories(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> views.MemoryPanel:
    """The memories on the path to the head (used / idle / forgotten), the summary in force,
    and the last background run's error, if any."""
    return memories.panel_of(tk, adventure_id)


@router.post("/adventures/{adventure_id}/memories", response_model=views.Memory, status_code=201)
def add_memory(
    adventure_id: int, body: memories.MemoryNew, tk: Talekeeper = Depends(get_tk)
) -> views.Memory:
    """Write a memory by hand. It belongs to the moment being read: it can be recalled on
    this line from here on, never after Undo past it or on another line."""
    return memories.add(tk, adventure_id, body)


class BankSwitch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(description="On: memories are written and sent. Off: neither.")


@router.put("/adventures/{adventure_id}/memory-bank", response_model=views.MemoryPanel)
def switch_memory_bank(
    adventure_id: int, body: BankSwitch, tk: Talekeeper = Depends(get_tk)
) -> views.MemoryPanel:
    """Turn this adventure's memory bank on or off (what it holds is kept either way)."""
    return memories.switch(tk, adventure_id, body.enabled)


@router.patch("/adventures/{adventure_id}/memories/{memory_id}", response_model=views.Memory)
def patch_memory(
    adventure_id: int, memory_id: int, body: memories.MemoryEdit, tk: Talekeeper = Depends(get_tk)
) -> views.Memory:
    return memories.edit(tk, adventure_id, memory_id, body)


@router.delete("/adventures/{adventure_id}/memories/{memory_id}", status_code=204)
def delete_memory(adventure_id: int, memory_id: int, tk: Talekeeper = Depends(get_tk)) -> None:
    memories.delete(tk, adventure_id, memory_id)


@router.get("/context/settings", response_model=ContextSettings)
def get_context_settings(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    return settings_service.context_settings_of(tk).model_dump()


@router.put("/context/settings", response_model=ContextSettings)
def put_context_settings(body: dict[str, Any], tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Any subset of the context and memory settings (see the schema of GET)."""
    return settings_service.save_context_settings(tk, body).model_dump()
