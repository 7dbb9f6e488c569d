"""Sampler presets and an adventure's samplers over JSON (service/samplers.py does the work;
the page is `pages_samplers.py`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from talekeeper.service import samplers
from talekeeper.service.app import Talekeeper
from talekeeper.views import settings as views
from talekeeper.web.deps import get_tk
from talekeeper.web.errors import ERRORS

router = APIRouter(prefix="/api", tags=["samplers"], responses=ERRORS)


class AdventureSamplers(BaseModel):
    model_config = ConfigDict(extra="forbid")

    preset: str | None = Field(None, description="A saved preset's name, or none.")
    values: samplers.Samplers = Field(
        default_factory=samplers.Samplers,
        description="Values of its own; they win over the preset.",
    )


@router.get("/sampler-presets", response_model=views.SamplerPresets)
def list_presets(tk: Talekeeper = Depends(get_tk)) -> views.SamplerPresets:
    """Every named preset: name → the samplers it sets."""
    return samplers.list_presets(tk)


@router.put("/sampler-presets/{name}", response_model=views.SamplerValues)
def save_preset(
    name: str, body: samplers.Samplers, tk: Talekeeper = Depends(get_tk)
) -> views.SamplerValues:
    """Create or replace a preset (min_p, top_k, repetition_penalty, presence_penalty, stop, seed)."""
    return samplers.keep_preset(tk, name, body.model_dump(exclude_none=True))


@router.delete("/sampler-presets/{name}", status_code=204)
def delete_preset(name: str, tk: Talekeeper = Depends(get_tk)) -> None:
    samplers.forget_preset(tk, name)


@router.get("/adventures/{adventure_id}/samplers", response_model=views.AdventureSamplersView)
def adventure_samplers(
    adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> views.AdventureSamplersView:
    """This adventure's preset and own values, and what its turns ask the model for."""
    return samplers.of_adventure(tk, adventure_id).samplers


@router.put("/adventures/{adventure_id}/samplers", response_model=views.SamplerChoice)
def set_adventure_samplers(
    adventure_id: int, body: AdventureSamplers, tk: Talekeeper = Depends(get_tk)
) -> views.SamplerChoice:
    return samplers.choose(tk, adventure_id, body.preset, body.values.model_dump(exclude_none=True))
