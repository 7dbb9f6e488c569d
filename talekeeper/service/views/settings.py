"""Views of the settings: what is stored and in effect, health, the connection check,
sampler presets and an adventure's samplers.

Built by `service/settings.py`, `service/samplers.py` and `llm.base.CheckReport`.
"""

from __future__ import annotations

from pydantic import Field

from talekeeper.llm.settings import ModelSettings
from talekeeper.service.settings import GenerationSettings
from talekeeper.service.views.base import View


class ModelSettingsView(View, ModelSettings):
    """Model settings; only the fields that are set appear."""


class SettingsView(View):
    """The stored settings, what is in effect for this run and why, and the model in use."""

    model: ModelSettingsView = Field(
        description="The model settings as stored (before environment and flags)."
    )
    generation: GenerationSettings = Field(description="The generation settings in effect.")
    effective_model: ModelSettingsView = Field(
        description="The model settings in effect for this run (environment and flags applied); never the API key."
    )
    overridden: dict[str, str] = Field(description="Model fields fixed for this run, and by what.")
    model_description: str = Field(description="The model in use, in words.")


class Health(View):
    """The server answers, with its version and the model in use."""

    status: str = Field(description="`ok` while the server answers.")
    version: str
    model: str = Field(description="The model in use, in words.")


class Check(View):
    """One step of the connection check."""

    check: str
    ok: bool | None = Field(description="Null: not tried (an earlier step failed).")
    detail: str


class ConnectionReport(View):
    """What works and what does not, tried against the configured model."""

    ok: bool
    provider: str
    endpoint: str | None
    model: str | None
    checks: list[Check]
    models_available: list[str]


class SamplerValues(View):
    """Samplers that are set (a field left out is not set here)."""

    min_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    stop: str | None = Field(None, description="Stop strings, separated by |.")
    seed: int | None = None


class EffectiveSamplers(View):
    """The samplers a turn asks the model for (only those set)."""

    min_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    stop: list[str] | None = None
    seed: int | None = None


class SamplerChoice(View):
    """An adventure's samplers: the preset it follows and its own values."""

    preset: str | None = Field(description="The preset followed, if any.")
    values: SamplerValues = Field(
        description="The adventure's own values; they win over the preset."
    )


class AdventureSamplersView(SamplerChoice):
    """An adventure's samplers, and what its turns ask the model for."""

    effective: EffectiveSamplers = Field(
        description="What this adventure's turns ask the model for."
    )
