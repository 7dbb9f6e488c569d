"""Search within a story: the JSON route and the results page (one service call each)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from talekeeper.service.app import Talekeeper
from talekeeper.service.search import search_story
from talekeeper.service.views.story import SearchResult
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS
from talekeeper.web.render import render

router = APIRouter()


@router.get(
    "/api/adventures/{adventure_id}/search",
    tags=["adventures"],
    response_model=SearchResult,
    responses=ERRORS,
)
def search(adventure_id: int, q: str = "", tk: Talekeeper = Depends(get_tk)) -> SearchResult:
    """The turns on the line being read whose action or narration holds `q` (case-insensitive),
    oldest first, each with an excerpt around the hit (`before`, `match`, `after`)."""
    return search_story(tk, adventure_id, q)


@router.get("/adventures/{adventure_id}/search", response_class=HTMLResponse)
def search_page(
    request: Request, adventure_id: int, q: str = "", tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    result = search_story(tk, adventure_id, q)
    return render(request, "search.html", adventure_id=adventure_id, **dict(result))
