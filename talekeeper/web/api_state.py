"""The state engine over HTTP: the state at the head, the player's corrections, the audit
trail of every proposal, and the published JSON Schemas."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field

from talekeeper.core import Talekeeper
from talekeeper.service import state_engine
from talekeeper.service.adventures import get_adventure, story_view
from talekeeper.service.origins import with_origin
from talekeeper.service.scenarios import get_scenario
from talekeeper.state import document_schema, proposal_schema, rules_schema
from talekeeper.state.canon import canon_log as build_canon_log
from talekeeper.state.creation import creation_options
from talekeeper.state.schema import canon_log_schema, origin_schema, scenario_schema
from talekeeper.story import tree
from talekeeper.web.api import get_tk

router = APIRouter(prefix="/api", tags=["state"])
SCHEMAS = {
    "rules": rules_schema, "document": document_schema, "proposal": proposal_schema,
    "scenario": scenario_schema, "origin": origin_schema, "canon-log": canon_log_schema,
}


class Correction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    events: list[Any] = Field(max_length=50, description="Events from the same vocabulary the model uses.")


@router.get("/adventures/{adventure_id}/state")
def get_state(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """The state at the moment being read, grouped for display, plus its raw document."""
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        head = tree.head(session, adventure)
        rules = state_engine.rules_of(adventure)
        document = state_engine.document_of(head.state, rules)
        return {
            "head_id": head.id,
            "view": state_engine.state_view(document, rules),
            "document": document.to_json(),
            "changes": state_engine.changes_of(head),
        }


@router.post("/adventures/{adventure_id}/state/corrections")
def post_correction(adventure_id: int, body: Correction, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Correct the state by hand. Corrections pass the same validator as the model's
    proposals, are recorded as the player's (they outrank the story), and become a step of
    the story of their own, so Undo takes one back. If nothing would change, nothing is written."""
    with tk.locks.hold(adventure_id), tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        head = tree.head(session, adventure)
        rules = state_engine.rules_of(adventure)
        before = state_engine.document_of(head.state, rules)
        state, record, report = state_engine.correct(before, body.events, rules, head.depth + 1)
        outcomes = state_engine.outcome_views(report)
        if not any(o["status"] in ("applied", "limited") for o in outcomes):
            raise HTTPException(422, {"message": "Nothing was changed.", "changes": outcomes})
        tree.append_child(
            session,
            adventure,
            head,
            tree.NewTurn(
                action_kind="correction",
                action_text=state_engine.correction_summary(report),
                narration="",
                state=state,
                proposal=record,
                model="player",
            ),
        )
        return {"changes": outcomes, "story": story_view(session, adventure, limit=5)}


@router.get("/adventures/{adventure_id}/state/audit")
def audit(
    adventure_id: int, limit: int = Query(50, ge=1, le=500), tk: Talekeeper = Depends(get_tk)
) -> list[dict[str, Any]]:
    """Every proposal on the line being read, newest first: raw text, parse errors, verdicts."""
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        nodes = tree.path_to(session, tree.head(session, adventure), limit=limit)
        trail = []
        for node in reversed(nodes):
            record = node.proposal or {}
            if not record.get("source") and not record.get("raw"):
                continue
            trail.append(
                {
                    "turn_id": node.id,
                    "depth": node.depth,
                    "source": record.get("source"),
                    "raw": record.get("raw"),
                    "parse_error": record.get("parse_error"),
                    "events": record.get("events"),
                    "changes": state_engine.changes_of(node),
                }
            )
        return trail


@router.get("/adventures/{adventure_id}/canon-log")
def canon_log(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """The canon log at the head (`/api/schemas/canon-log`): what every model role reads —
    hidden stats only as their band word, no character's private knowledge."""
    with tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        head = tree.head(session, adventure)
        rules = state_engine.rules_of(adventure)
        return build_canon_log(state_engine.document_of(head.state, rules), rules, head.depth)


@router.get("/scenarios/{scenario_id}/character")
def character_options(
    scenario_id: str, origin_id: str | None = None, tk: Talekeeper = Depends(get_tk)
) -> dict[str, Any]:
    """What character creation offers in this scenario and origin (classes, stats and how
    they are made); `{"creation": null}` when the scenario has none."""
    with tk.db.session() as session:
        data = with_origin(get_scenario(session, scenario_id).data, origin_id)
    return {"creation": creation_options(data.get("rules"), (data.get("origin") or {}).get("build"))}


@router.get("/schemas/{name}")
def get_schema(name: str) -> dict[str, Any]:
    """The published JSON Schemas: `scenario`, `origin`, `rules` (a scenario's rules),
    `canon-log`, `document`, `proposal`."""
    if name not in SCHEMAS:
        raise HTTPException(404, f"No schema {name!r}; there are: {', '.join(SCHEMAS)}.")
    return SCHEMAS[name]()
