"""The JSON API for moving stories in and out of talekeeper.

    GET  /api/adventures/{id}/export     the whole adventure as a bundle (gzip JSON Lines, streamed)
    POST /api/adventures/import          a bundle (the request body); checked whole, then written (201)
    POST /api/adventures/starter         a new copy of the starter adventure (201)
    GET  /api/schemas/bundle             the JSON Schema of a bundle's line
    POST /api/interop/import?filename=…  a card, lorebook or other app's file (the body):
                                         what it would become and the import report; saves nothing
    POST /api/interop/save               `{"scenario": …}` the reviewed document, saved (201);
                                         with `"into": id`, only its story cards, added to that scenario
    GET  /api/scenarios/{id}/card.json   the scenario as a Character Card V3
    GET  /api/scenarios/{id}/card.png    the same card inside a PNG

A refused file answers 422 with `detail` (for a bundle, the path of the first problem)
and changes nothing. An import's body is a file, not a JSON request: the body guard does
not measure its nesting (PNG, zip and gzip bytes hold brackets at random); the reader
checks the JSON it parses. Conversion runs off the event loop.
"""

from __future__ import annotations

import tempfile
from typing import Any

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from talekeeper.interop import bundles, imports, starter
from talekeeper.interop.bundle_format import MEDIA_TYPE, bundle_schema
from talekeeper.service.app import Talekeeper
from talekeeper.views.scenarios import CharacterCard, ImportPreview, ScenarioSaved
from talekeeper.views.state import JsonSchemaDocument
from talekeeper.views.story import AdventureImported
from talekeeper.web.deps import get_tk
from talekeeper.web.downloads import adventure_bundle, saved_as
from talekeeper.web.errors import ERRORS, error_response

router = APIRouter(prefix="/api", tags=["export and import"], responses=ERRORS)
REFUSED = {
    422: {
        **ERRORS[422],
        "description": "The file was refused (`detail` and `errors` name the first problem); nothing was written.",
    }
}


async def spool(request: Request) -> tempfile.SpooledTemporaryFile:
    """The request body in a temporary file (kept in memory while small)."""
    spooled = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)
    async for chunk in request.stream():
        spooled.write(chunk)
    return spooled


def import_spooled(tk: Talekeeper, spooled: Any) -> bundles.ImportResult:
    size = spooled.tell()

    class _Reopen:
        def __enter__(self) -> Any:
            spooled.seek(0)
            return spooled

        def __exit__(self, *exc: Any) -> None:
            return None

    return bundles.import_file(tk, _Reopen, size)


@router.get(
    "/adventures/{adventure_id}/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
            "description": "The bundle.",
        }
    },
)
def export_adventure(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> StreamingResponse:
    """Every node, take and line, Save Points, state snapshots, the audit trail, Insights,
    memories and summaries, plot, story cards, rules and a scenario snapshot."""
    return adventure_bundle(tk, adventure_id)


@router.post(
    "/adventures/import", status_code=201, response_model=AdventureImported, responses=REFUSED
)
async def import_adventure(request: Request, tk: Talekeeper = Depends(get_tk)) -> AdventureImported:
    """The body is a bundle written by export. It becomes a new adventure."""
    spooled = await spool(request)
    try:  # checking a large bundle takes seconds: off the event loop, so others are served
        result = await run_in_threadpool(import_spooled, tk, spooled)
    finally:
        spooled.close()
    return _imported(result)


@router.post("/adventures/starter", status_code=201, response_model=AdventureImported)
async def open_starter(tk: Talekeeper = Depends(get_tk)) -> AdventureImported:
    """A new copy of the starter adventure: a short story already under way (takes, a
    second line, a Save Point, chips, Insights), to read and continue."""
    result = await run_in_threadpool(starter.open_starter, tk)
    return _imported(result)


def _imported(result: bundles.ImportResult) -> AdventureImported:
    """The answer of both doors that make an adventure from a bundle (import, starter)."""
    return AdventureImported(
        id=result.adventure_id,
        title=result.title,
        turns=result.turns,
        nodes=result.nodes,
        notes=result.notes,
    )


@router.get("/schemas/bundle", response_model=JsonSchemaDocument)
def schema() -> dict[str, Any]:
    return bundle_schema()


@router.post("/interop/import", response_model=ImportPreview, responses=REFUSED)
async def import_preview(
    request: Request, filename: str = Query("", max_length=300), tk: Talekeeper = Depends(get_tk)
) -> Any:
    """Character Cards V1/V2/V3 (JSON, PNG, CHARX), SillyTavern World Info, character
    books, AI Dungeon scenarios and world info, KoboldAI saves, NovelAI lorebooks,
    stories and scenarios, Agnai memory books: converted and reported, not saved."""
    raw = await request.body()
    try:  # converting a large file takes a while: off the event loop, so others are served
        return await run_in_threadpool(imports.preview, tk, raw, filename)
    except imports.Refused as exc:
        return error_response(422, f"{exc} Nothing was imported.", "Refused")


@router.post("/interop/save", status_code=201, response_model=ScenarioSaved, responses=REFUSED)
def import_save(
    scenario: dict[str, Any] = Body(..., embed=True),
    into: str | None = Body(
        None,
        embed=True,
        max_length=80,
        description="Add only the story cards to this scenario of yours.",
    ),
    tk: Talekeeper = Depends(get_tk),
) -> Any:
    """Save a reviewed document from the preview as your own scenario, or add its story
    cards to one you have (`into`)."""
    if into:
        return imports.add_cards(tk, into, scenario)
    return imports.save(tk, scenario)


@router.get("/scenarios/{scenario_id}/card.json", response_model=CharacterCard)
def card_json(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> JSONResponse:
    card, row_id = imports.card_json(tk, scenario_id)
    return JSONResponse(card, headers=saved_as(f"{row_id}.card.json"))


@router.get(
    "/scenarios/{scenario_id}/card.png",
    response_class=Response,
    responses={
        200: {
            "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
            "description": "The card inside a PNG.",
        }
    },
)
def card_png(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Response:
    data, row_id = imports.card_png(tk, scenario_id)
    return Response(
        data,
        media_type="image/png",
        headers=saved_as(f"{row_id}.card.png"),
    )
