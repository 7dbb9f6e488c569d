"""The state engine over HTTP: the state at the head, the player's corrections, the audit
trail of every proposal, and the published JSON Schemas."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from talekeeper.errors import NotFound
from talekeeper.service import adventures, corrections
from talekeeper.service.app import Talekeeper
from talekeeper.state import document_schema, proposal_schema, rules_schema
from talekeeper.state.schema import canon_log_schema, origin_schema, scenario_schema
from talekeeper.views import state as views
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS

router = APIRouter(prefix="/api", tags=["state"], responses=ERRORS)
SCHEMAS = {
    "rules": rules_schema,
    "document": document_schema,
    "proposal": proposal_schema,
    "scenario": scenario_schema,
    "origin": origin_schema,
    "canon-log": canon_log_schema,
}


class SchemaNotFound(NotFound):
    pass


class Correction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    events: list[Any] = Field(
        max_length=corrections.MAX_EVENTS,
        description="Events from the same vocabulary the model uses.",
    )


@router.get("/adventures/{adventure_id}/state", response_model=views.StateAtHead)
def get_state(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> views.StateAtHead:
    """The state at the moment being read, grouped for display, plus its raw document."""
    return corrections.state_at_head(tk, adventure_id).at


@router.post("/adventures/{adventure_id}/state/corrections", response_model=views.Corrected)
def post_correction(
    adventure_id: int, body: Correction, tk: Talekeeper = Depends(get_tk)
) -> views.Corrected:
    """Correct the state by hand. Corrections pass the same validator as the model's
    proposals, are recorded as the player's (they outrank the story), and become a step of
    the story of their own, so Undo takes one back. If nothing would change, nothing is
    written: 422 with each event's verdict in `errors`."""
    return corrections.correct(tk, adventure_id, body.events)


@router.post(
    "/adventures/{adventure_id}/turns/{turn_id}/contradictions/{index}/accept",
    response_model=views.Corrected,
)
def accept_contradiction(
    adventure_id: int, turn_id: int, index: int, tk: Talekeeper = Depends(get_tk)
) -> views.Corrected:
    """ "It's right — update the state": make the state agree with what the turn's narration
    said (its `contradictions[index]`, counted from 0) — the events the warning implies, as
    your own correction: the same validator, a step of the story of its own that Undo takes
    back. Only while that turn is the one being read, at the end of its line (409 otherwise);
    422 with each verdict if the rules refuse it (a dead man brought back, say)."""
    return corrections.accept(tk, adventure_id, turn_id, index)


@router.get("/adventures/{adventure_id}/state/audit", response_model=list[views.AuditEntry])
def audit(
    adventure_id: int, limit: int = Query(50, ge=1, le=500), tk: Talekeeper = Depends(get_tk)
) -> list[views.AuditEntry]:
    """Every proposal on the line being read, newest first: raw text, parse errors, verdicts."""
    return corrections.audit(tk, adventure_id, limit)


@router.get("/adventures/{adventure_id}/canon-log", response_model=views.CanonLog)
def canon_log(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> views.CanonLog:
    """The canon log at the head (`/api/schemas/canon-log`): what every model role reads —
    hidden stats only as their band word, no character's private knowledge."""
    return corrections.canon_log(tk, adventure_id)


@router.get("/scenarios/{scenario_id}/character", response_model=views.CharacterOptions)
def character_options(
    scenario_id: str, origin_id: str | None = None, tk: Talekeeper = Depends(get_tk)
) -> views.CharacterOptions:
    """What character creation offers in this scenario and origin (classes, stats and how
    they are made); `{"creation": null}` when the scenario has none."""
    return adventures.character_options(tk, scenario_id, origin_id)


@router.get("/schemas/{name}", response_model=views.JsonSchemaDocument)
def get_schema(name: str) -> dict[str, Any]:
    """The published JSON Schemas: `scenario`, `origin`, `rules` (a scenario's rules),
    `canon-log`, `document`, `proposal`."""
    if name not in SCHEMAS:
        raise SchemaNotFound(f"No schema {name!r}; there are: {', '.join(SCHEMAS)}.")
    return SCHEMAS[name]()
