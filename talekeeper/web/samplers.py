"""Sampler presets and an adventure's samplers over HTTP (service/samplers.py does the work)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from talekeeper.service import samplers
from talekeeper.service.adventures import get_adventure
from talekeeper.service.app import Talekeeper
from talekeeper.web.api import get_tk

router = APIRouter(prefix="/api", tags=["samplers"])


class AdventureSamplers(BaseModel):
    model_config = ConfigDict(extra="forbid")

    preset: str | None = Field(None, description="A saved preset's name, or none.")
    values: samplers.Samplers = Field(default_factory=samplers.Samplers, description="Values of its own; they win over the preset.")


@router.get("/sampler-presets")
def list_presets(tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Every named preset: name → the samplers it sets."""
    with tk.db.session() as session:
        return samplers.presets(session)


@router.put("/sampler-presets/{name}")
def save_preset(name: str, body: samplers.Samplers, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """Create or replace a preset (min_p, top_k, repetition_penalty, presence_penalty, stop, seed)."""
    with tk.db.session() as session:
        return samplers.save_preset(session, name, body.model_dump(exclude_none=True))


@router.delete("/sampler-presets/{name}", status_code=204)
def delete_preset(name: str, tk: Talekeeper = Depends(get_tk)) -> None:
    with tk.db.session() as session:
        samplers.delete_preset(session, name)


@router.get("/adventures/{adventure_id}/samplers")
def adventure_samplers(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    """This adventure's preset and own values, and what its turns ask the model for."""
    with tk.db.session() as session:
        get_adventure(session, adventure_id)
        choice = samplers.adventure_choice(session, adventure_id)
        generation = tk.generation()
        return {**choice, "effective": samplers.for_adventure(session, adventure_id, generation)}


@router.put("/adventures/{adventure_id}/samplers")
def set_adventure_samplers(adventure_id: int, body: AdventureSamplers, tk: Talekeeper = Depends(get_tk)) -> dict[str, Any]:
    with tk.locks.hold(adventure_id), tk.db.session() as session:
        get_adventure(session, adventure_id)
        return samplers.set_adventure_choice(session, adventure_id, body.preset, body.values.model_dump(exclude_none=True))
