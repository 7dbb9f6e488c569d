"""Renaming an adventure: the JSON route and the home page's form (one service call each)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field

from talekeeper.service import adventures
from talekeeper.service.adventures import AdventureTitleInvalid
from talekeeper.service.app import Talekeeper
from talekeeper.service.views.story import AdventureSummary
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS
from talekeeper.web.render import render

router = APIRouter()


class Rename(BaseModel):
    title: str = Field(
        max_length=adventures.MAX_TITLE * 2, description="The new title (spaces are tidied)."
    )


@router.patch(
    "/api/adventures/{adventure_id}",
    tags=["adventures"],
    response_model=AdventureSummary,
    responses=ERRORS,
)
def rename_adventure(
    adventure_id: int, body: Rename, tk: Talekeeper = Depends(get_tk)
) -> AdventureSummary:
    """Rename an adventure. Answers with its summary (as in `GET /api/adventures`)."""
    return adventures.rename(tk, adventure_id, body.title)


@router.post("/adventures/{adventure_id}/rename", response_class=HTMLResponse)
def rename_page(
    request: Request, adventure_id: int, title: str = Form(""), tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    """The home page's rename form: answers with the adventure's card (and why, if refused)."""
    message = None
    try:
        summary = adventures.rename(tk, adventure_id, title)
    except AdventureTitleInvalid as exc:
        message = str(exc)
        summary = adventures.summary(tk, adventure_id)
    # 200 either way: htmx swaps the card in, with the refusal written on it.
    return render(request, "_adventure_card.html", a=summary, message=message)
