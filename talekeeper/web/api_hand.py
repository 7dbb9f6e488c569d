"""The player's hand over JSON: "Write my turn" and "Suggest" (service/hand.py does the work).

JSON routes only: the play page's script (static/hand.js) puts a draft in the box and
suggestions under it as buttons; nothing is sent until the player sends it.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from talekeeper.service import hand
from talekeeper.service.app import Talekeeper
from talekeeper.story.actions import ActionKind, DraftedKind
from talekeeper.views.context import Draft, Suggestions
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS

router = APIRouter(prefix="/api", tags=["your hand"], responses=ERRORS)


class WriteAsked(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: DraftedKind = Field(ActionKind.DO, description="The action kind to draft.")


@router.post("/adventures/{adventure_id}/hand/write", response_model=Draft)
async def write_my_turn(
    adventure_id: int, body: WriteAsked | None = None, tk: Talekeeper = Depends(get_tk)
) -> Draft:
    """Draft the player's next action in their own voice (a role call of its own, shown in
    Insights). Nothing is sent and nothing in the story changes."""
    return await hand.write_turn(tk, adventure_id, (body or WriteAsked()).kind)


@router.post("/adventures/{adventure_id}/hand/suggest", response_model=Suggestions)
async def suggest(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> Suggestions:
    """Three short possible actions (a role call of its own, shown in Insights)."""
    return await hand.suggest(tk, adventure_id)
