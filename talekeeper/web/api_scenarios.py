"""The JSON API for writing scenarios: create, check, update, duplicate, delete, import, export.

    POST   /api/scenarios                       create one of your own (201)
    POST   /api/scenarios/check                 every mistake in a document, by path; saves nothing
    PUT    /api/scenarios/{id}                  replace it (built-in scenarios are read-only)
    DELETE /api/scenarios/{id}                  delete it; adventures started from it play on
    POST   /api/scenarios/{id}/duplicate        your own copy of any scenario (201)
    GET    /api/scenarios/{id}/export           the scenario as a file
    POST   /api/scenarios/import                a file from export (or a bare document) (201)

    GET    /api/scenarios                       every scenario
    GET    /api/scenarios/{id}                  one, with its document

A refused document answers 422 with `detail` (a sentence) and `errors` (each mistake with
its path, e.g. `rules.stats.world.storm.max: …`) and changes nothing; a missing scenario
answers 404.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from talekeeper.service import scenarios
from talekeeper.service.app import Talekeeper
from talekeeper.views import scenarios as views
from talekeeper.web.deps import get_tk
from talekeeper.web.downloads import saved_as
from talekeeper.web.errors import ERRORS

router = APIRouter(prefix="/api/scenarios", tags=["scenarios"], responses=ERRORS)


@router.get("", response_model=list[views.ScenarioListed])
def list_scenarios(tk: Talekeeper = Depends(get_tk)) -> list[dict[str, Any]]:
    return scenarios.summaries(tk)


@router.post("", status_code=201, response_model=views.Scenario)
def create(
    data: dict[str, Any] = Body(..., description="A scenario document."),
    tk: Talekeeper = Depends(get_tk),
) -> Any:
    return scenarios.create(tk, data)


@router.post("/check", response_model=views.ScenarioCheck)
def check(data: Any = Body(..., description="A scenario document to check.")) -> dict[str, Any]:
    """Every mistake in the document, each with its path; nothing is saved."""
    errors = scenarios.check_scenario(data)
    return {"valid": not errors, "errors": errors}


@router.post("/import", status_code=201, response_model=views.ScenarioImported)
async def import_file(request: Request, tk: Talekeeper = Depends(get_tk)) -> Any:
    """The body is the file's bytes: an export, or a bare scenario document (at most 1 MB).
    An id already taken gets a fresh one (see `notes`)."""
    raw = await request.body()  # checking a file of thousands of cards takes a while:
    return await run_in_threadpool(scenarios.import_file, tk, raw)  # off the event loop


@router.get("/{scenario_id}", response_model=views.Scenario)
def get_scenario(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> views.Scenario:
    return scenarios.read(tk, scenario_id)


@router.put("/{scenario_id}", response_model=views.Scenario)
def update(
    scenario_id: str, data: dict[str, Any] = Body(...), tk: Talekeeper = Depends(get_tk)
) -> Any:
    return scenarios.update(tk, scenario_id, data)


@router.delete("/{scenario_id}", status_code=204, response_class=Response)
def delete(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Response:
    scenarios.delete(tk, scenario_id)
    return Response(status_code=204)


@router.post("/{scenario_id}/duplicate", status_code=201, response_model=views.Scenario)
def duplicate(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Any:
    return scenarios.duplicate(tk, scenario_id)


@router.get("/{scenario_id}/export", response_model=views.ScenarioFile)
def export(scenario_id: str, tk: Talekeeper = Depends(get_tk)) -> Any:
    document, filename = scenarios.export(tk, scenario_id)
    return JSONResponse(document, headers=saved_as(filename))
