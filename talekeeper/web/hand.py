"""The player's hand over HTTP: "Write my turn" and "Suggest" (service/hand.py does the work).

JSON routes only: the play page's script (static/hand.js) puts a draft in the box and
suggestions under it as buttons; nothing is sent until the player sends it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from talekeeper.service import hand
from talekeeper.service.app import Talekeeper
from talekeeper.service.views.base import View
from talekeeper.story.actions import ActionKind, DraftedKind
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS

router = APIRouter(prefix="/api", tags=["your hand"], responses=ERRORS)


class WriteAsked(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: DraftedKind = Field(ActionKind.DO, description="The action kind to draft.")


class Draft(View):
    """A draft of the player's next action: for the box, never sent by itself."""

    kind: str
    text: str
    note: str = Field(description="What the guards took out of the model's answer ('' if none).")


class Suggestions(View):
    """Short things the player could do next (up to three)."""

    suggestions: list[str]
    note: str = Field(description="What the guards took out of the model's answer ('' if none).")


@router.post("/adventures/{adventure_id}/hand/write", response_model=Draft)
async def write_my_turn(
    adventure_id: int, body: WriteAsked | None = None, tk: Talekeeper = Depends(get_tk)
) -> dict[str, Any]:
    """Draft the player's next action in their own voice (a role call of its own, shown in
    Insights). Nothing is sent and nothing in the story changes."""
    return await hand.write_turn(tk, adventure_id, (body or WriteAsked()).kind)


@router.post("/adventures/{adventure_id}/hand/suggest", response_model=Suggestions)
async def suggest(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Three short possible actions (a role call of its own, shown in Insights)."""
    return await hand.suggest(tk, adventure_id)
