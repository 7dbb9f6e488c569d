"""The JSON API for writing scenarios: create, check, update, duplicate, delete, import, export.

    POST   /api/scenarios                       create one of your own (201)
    POST   /api/scenarios/check                 every mistake in a document, by path; saves nothing
    PUT    /api/scenarios/{id}                  replace it (built-in scenarios are read-only)
    DELETE /api/scenarios/{id}                  delete it; adventures started from it play on
    POST   /api/scenarios/{id}/duplicate        your own copy of any scenario (201)
    GET    /api/scenarios/{id}/export           the scenario as a file
    POST   /api/scenarios/import                a file from export (or a bare document) (201)

Listing and reading are in `api.py` (`GET /api/scenarios`, `GET /api/scenarios/{id}`).
A refused document answers 422 with `detail` (a sentence) and `errors` (each mistake with
its path, e.g. `rules.stats.world.storm.max: …`) and changes nothing.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import JSONResponse, Response

from talekeeper.core import Talekeeper
from talekeeper.service import scenarios
from talekeeper.web.api import get_tk

router = APIRouter(prefix="/api/scenarios", tags=["scenarios"])
INVALID = {422: {"description": "The document has mistakes (`errors`, by path); nothing was saved."}}


def _refused(exc: scenarios.ScenarioError) -> JSONResponse:
    errors = exc.errors if isinstance(exc, scenarios.ScenarioInvalid) else []
    return JSONResponse({"detail": str(exc), "errors": errors, "error": type(exc).__name__}, status_code=422)


def _view(row) -> dict[str, Any]:
    return {**scenarios.scenario_summary(row), "data": row.data}


@router.post("", status_code=201, responses=INVALID)
def create(data: dict[str, Any] = Body(..., description="A scenario document."), tk: Talekeeper = Depends(get_tk)) -> Any:
    try:
        with tk.db.session() as session:
            return _view(scenarios.create_scenario(session, data))
    except scenarios.ScenarioError as exc:
        return _refused(exc)


@router.post("/check")
def check(data: Any = Body(..., description="A scenario document to check.")) -> dict[str, Any]:
    """Every mistake in the document, each with its path; nothing is saved."""
    errors = scenarios.check_scenario(data)
    return {"valid": not errors, "errors": errors}


@router.post("/import", status_code=201, responses=INVALID)
async def import_file(request: Request, tk: Talekeeper = Depends(get_tk)) -> Any:
    """The body is the file's bytes: an export, or a bare scenario document (at most 1 MB).
    An id already taken gets a fresh one (see `notes`)."""
    raw = await request.body()
    try:
        with tk.db.session() as session:
            row, notes = scenarios.import_scenario(session, raw)
            return {**_view(row), "notes": notes}
    except scenarios.ScenarioError as exc:
        return _refused(exc)


@router.put("/{scenario_id}", responses=INVALID)
def update(scenario_id: str, data: dict[str, Any] = Body(...), tk: Talekeeper = Depends(get_tk)) -> Any:
    try:
        with tk.db.session() as session:
            return _view(scenarios.update_scenario(session, scenario_id, data))
    except scenarios.ScenarioError as exc:
        return _refused(exc)


@router.delete("/{scenario_id}", status_code=204, response_class=Response, responses=INVALID)
def delete(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Response:
    try:
        with tk.db.session() as session:
            scenarios.delete_scenario(session, scenario_id)
    except scenarios.ScenarioError as exc:
        return _refused(exc)
    return Response(status_code=204)


@router.post("/{scenario_id}/duplicate", status_code=201, responses=INVALID)
def duplicate(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Any:
    try:
        with tk.db.session() as session:
            return _view(scenarios.duplicate_scenario(session, scenario_id))
    except scenarios.ScenarioError as exc:
        return _refused(exc)


@router.get("/{scenario_id}/export", responses=INVALID)
def export(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Any:
    try:
        with tk.db.session() as session:
            row = scenarios.get_scenario(session, scenario_id)
            document = scenarios.export_scenario(row)
            filename = f"{row.id}.talekeeper.json"
    except scenarios.ScenarioError as exc:
        return _refused(exc)
    return JSONResponse(document, headers={"Content-Disposition": f'attachment; filename="{filename}"'})
