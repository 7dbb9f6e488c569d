"""The JSON API for adventures: start, read, rename, search, delete, play a turn, undo and
redo (OpenAPI at /docs).

Routes translate HTTP to service calls and back; the services own the transaction and
the writer lock.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from talekeeper.service import adventures, tree_ops
from talekeeper.service.adventures import Shown
from talekeeper.service.app import Talekeeper
from talekeeper.service.plot import Persona
from talekeeper.service.search import search_story
from talekeeper.service.turns import play_turn
from talekeeper.story.actions import AnyKind, talk_text
from talekeeper.views import story as views
from talekeeper.web.deps import get_tk, shown_turns
from talekeeper.web.errors import ERRORS
from talekeeper.web.streaming import TURN_STREAM, turn_response

router = APIRouter(prefix="/api", responses=ERRORS)


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
    answers: dict[str, str] = Field(
        default_factory=dict, description="Answers to the scenario's ${placeholders}."
    )
    title: str | None = Field(None, max_length=200)
    origin_id: str | None = Field(
        None, max_length=80, description="Where to start, when the scenario has several origins."
    )
    persona: Persona | None = Field(
        None, description="The player's character; blank fields keep the scenario's."
    )
    character: CharacterChoice | None = Field(
        None, description="Character creation, for scenarios that declare it."
    )


class TurnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: AnyKind
    text: str = Field("", max_length=4000)
    to: str | None = Field(
        None,
        max_length=80,
        description="Talk: the character spoken to (name or id); they answer in their own call.",
    )


@router.get("/adventures", response_model=list[views.AdventureSummary])
def list_adventures(tk: Talekeeper = Depends(get_tk)) -> list[views.AdventureSummary]:
    return adventures.summaries(tk)


@router.post("/adventures", status_code=201, response_model=views.Story)
def start_adventure(body: NewAdventure, tk: Talekeeper = Depends(get_tk)) -> views.Story:
    persona = body.persona.model_dump() if body.persona else None
    character = body.character.model_dump(by_alias=True) if body.character else None
    return adventures.start(
        tk, body.scenario_id, body.answers, body.title, body.origin_id, persona, character
    )


@router.post("/adventures/blank", status_code=201, response_model=views.Story)
def start_blank(body: adventures.BlankStart, tk: Talekeeper = Depends(get_tk)) -> views.Story:
    """A story from nothing but its first lines (`opening`): no scenario, rules or state."""
    return adventures.start_from_blank(tk, body)


@router.get("/adventures/{adventure_id}", response_model=views.Story)
def get_adventure(
    adventure_id: int,
    limit: int = Query(adventures.PAGE_SIZE, ge=1, le=500),
    before: int | None = Query(None, description="Page back: turns before this turn id."),
    tk: Talekeeper = Depends(get_tk),
) -> views.Story:
    return adventures.story(tk, adventure_id, limit=limit, before=before)


@router.delete("/adventures/{adventure_id}", status_code=204)
def delete_adventure(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> None:
    adventures.delete(tk, adventure_id)


class Rename(BaseModel):
    title: str = Field(
        max_length=adventures.MAX_TITLE * 2, description="The new title (spaces are tidied)."
    )


@router.patch(
    "/adventures/{adventure_id}", tags=["adventures"], response_model=views.AdventureSummary
)
def rename_adventure(
    adventure_id: int, body: Rename, tk: Talekeeper = Depends(get_tk)
) -> views.AdventureSummary:
    """Rename an adventure. Answers with its summary (as in `GET /api/adventures`)."""
    return adventures.rename(tk, adventure_id, body.title)


@router.get(
    "/adventures/{adventure_id}/search", tags=["adventures"], response_model=views.SearchResult
)
def search(adventure_id: int, q: str = "", tk: Talekeeper = Depends(get_tk)) -> views.SearchResult:
    """The turns on the line being read whose action or narration holds `q` (case-insensitive),
    oldest first, each with an excerpt around the hit (`before`, `match`, `after`)."""
    return search_story(tk, adventure_id, q)


@router.post("/adventures/{adventure_id}/undo", response_model=views.Story | views.StoryDelta)
def undo(
    adventure_id: int,
    shown: Shown | None = Depends(shown_turns),
    tk: Talekeeper = Depends(get_tk),
) -> views.Story | views.StoryDelta:
    """Step back one turn: the story as it now reads, or (given the turns you show) what
    changed for them."""
    return tree_ops.for_api(tree_ops.undo(tk, adventure_id, shown))


@router.post("/adventures/{adventure_id}/redo", response_model=views.Story | views.StoryDelta)
def redo(
    adventure_id: int,
    shown: Shown | None = Depends(shown_turns),
    tk: Talekeeper = Depends(get_tk),
) -> views.Story | views.StoryDelta:
    """Step forward one turn, answered as undo is."""
    return tree_ops.for_api(tree_ops.redo(tk, adventure_id, shown))


@router.post(
    "/adventures/{adventure_id}/turns", response_model=views.TurnResult, responses=TURN_STREAM
)
async def post_turn(
    adventure_id: int, body: TurnRequest, request: Request, tk: Talekeeper = Depends(get_tk)
):
    """Play a turn. Ask for `text/event-stream` to receive it as it is written.

    SSE events: `accepted`, `text`, `reasoning`, `retold` (told again: clear the narration), `status`, `done` (the written turn), `error`.
    """
    text = talk_text(body.to, body.text) if body.kind == "talk" and body.to else body.text
    return await turn_response(play_turn(tk, adventure_id, body.kind, text), request)
