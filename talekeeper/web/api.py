"""The JSON API under /api: everything the pages do, for any client (OpenAPI at /docs)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse

from talekeeper import __version__
from talekeeper.core import Talekeeper
from talekeeper.service import adventures, scenarios
from talekeeper.service import settings as settings_service
from talekeeper.service.plot import Persona
from talekeeper.service.turns import TurnEvent, TurnFailed, play_turn
from talekeeper.story import tree
from talekeeper.story.actions import talk_text

router = APIRouter(prefix="/api")


def get_tk(request: Request) -> Talekeeper:
    return request.app.state.tk


class CharacterChoice(BaseModel):
    """Character creation within the origin (when the scenario declares it): name, a
    class from the origin's allowed list, and — for point-buy — the stats bought. Rolled
    stats and hidden stats (luck) are rolled by the server; they cannot be chosen."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field("", max_length=80)
    class_: str | None = Field(None, alias="class", max_length=48)
    stats: dict[str, int] = Field(default_factory=dict)


class NewAdventure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario_id: str = Field(max_length=80)
    answers: dict[str, str] = Field(default_factory=dict, description="Answers to the scenario's ${placeholders}.")
    title: str | None = Field(None, max_length=200)
    origin_id: str | None = Field(None, max_length=80, description="Where to start, when the scenario has several origins.")
    persona: Persona | None = Field(None, description="The player's character; blank fields keep the scenario's.")
    character: CharacterChoice | None = Field(None, description="Character creation, for scenarios that declare it.")


class TurnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["do", "say", "story", "continue", "talk"]
    text: str = Field("", max_length=4000)
    to: str | None = Field(None, max_length=80, description="Talk: the character spoken to (name or id); they answer in their own call.")


@router.get("/health")
def health(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    return {"status": "ok", "version": __version__, "model": tk.model_description()}


@router.get("/scenarios")
def list_scenarios(tk: Talekeeper = Depends(get_tk)) -> list[dict[str, Any]]:
    with tk.db.session() as session:
        return [scenarios.scenario_summary(s) for s in scenarios.list_scenarios(session)]


@router.get("/scenarios/{scenario_id}")
def get_scenario(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    with tk.db.session() as session:
        row = scenarios.get_scenario(session, scenario_id)
        return {**scenarios.scenario_summary(row), "data": row.data}


@router.get("/adventures")
def list_adventures(tk: Talekeeper = Depends(get_tk)) -> list[dict[str, Any]]:
    with tk.db.session() as session:
        return [adventures.adventure_summary(session, a) for a in adventures.list_adventures(session)]


@router.post("/adventures", status_code=201)
def start_adventure(body: NewAdventure, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    with tk.db.session() as session:
        persona = body.persona.model_dump() if body.persona else None
        character = body.character.model_dump(by_alias=True) if body.character else None
        adventure = adventures.start_adventure(
            session, body.scenario_id, body.answers, body.title, body.origin_id, persona, character=character
        )
        return adventures.story_view(session, adventure)


@router.get("/adventures/{adventure_id}")
def get_adventure(
    adventure_id: int,
    limit: int = Query(adventures.PAGE_SIZE, ge=1, le=500),
    before: int | None = Query(None, description="Page back: turns before this turn id."),
    tk: Talekeeper = Depends(get_tk),
) -> dict[str, Any]:
    with tk.db.session() as session:
        adventure = adventures.get_adventure(session, adventure_id)
        return adventures.story_view(session, adventure, limit=limit, before=before)


@router.delete("/adventures/{adventure_id}", status_code=204)
def delete_adventure(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> None:
    with tk.locks.hold(adventure_id), tk.db.session() as session:
        adventures.delete_adventure(session, adventures.get_adventure(session, adventure_id))


def _move(tk: Talekeeper, adventure_id: int, move) -> dict[str, Any]:
    with tk.locks.hold(adventure_id), tk.db.session() as session:
        adventure = adventures.get_adventure(session, adventure_id)
        move(session, adventure)
        return adventures.story_view(session, adventure)


@router.post("/adventures/{adventure_id}/undo")
def undo(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    return _move(tk, adventure_id, tree.undo)


@router.post("/adventures/{adventure_id}/redo")
def redo(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    return _move(tk, adventure_id, tree.redo)


def sse_message(event: TurnEvent) -> dict[str, str]:
    payload = {"text": event.text} if event.kind in ("text", "reasoning") else event.data
    return {"event": event.kind, "data": json.dumps(payload)}


@router.post(
    "/adventures/{adventure_id}/turns",
    responses={200: {"content": {"text/event-stream": {}}, "description": "The finished turn, or an SSE stream of it."}},
)
async def post_turn(
    adventure_id: int, body: TurnRequest, request: Request, tk: Talekeeper = Depends(get_tk)
):
    """Play a turn. Ask for `text/event-stream` to receive it as it is written.

    SSE events: `accepted`, `text`, `reasoning`, `done` (the written turn), `error`.
    """
    text = talk_text(body.to, body.text) if body.kind == "talk" and body.to else body.text
    return await turn_response(play_turn(tk, adventure_id, body.kind, text), request)


async def turn_response(events: AsyncIterator[TurnEvent], request: Request):
    """A turn's events as an SSE stream when the client asks for one, else the finished turn."""
    first = await anext(events)  # refusals (busy, bad action, unknown adventure) raise here
    if "text/event-stream" in request.headers.get("accept", ""):

        async def stream():
            yield sse_message(first)
            async for event in events:
                yield sse_message(event)

        return EventSourceResponse(stream(), ping=15)
    async for event in events:
        if event.kind == "done":
            return event.data
        if event.kind == "error":
            raise TurnFailed(event.data["message"])
    raise TurnFailed("The turn ended without a result.")


@router.get("/settings")
def get_settings(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    with tk.db.session() as session:
        stored = settings_service.stored_settings(session)
    effective = tk.model_settings().model_dump(exclude={"api_key"})
    return {
        **stored,
        "effective_model": effective,
        "overridden": settings_service.overridden_fields(tk.model_overrides),
        "generation": tk.generation().model_dump(),
        "model_description": tk.model_description(),
    }


@router.put("/settings")
def put_settings(body: settings_service.SettingsUpdate, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    with tk.db.session() as session:
        settings_service.update_settings(session, body)
    return get_settings(tk)


@router.post("/settings/test")
async def test_connection(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Try the configured model and say plainly what works and what does not."""
    report = await tk.provider().check()
    return report.as_dict()
