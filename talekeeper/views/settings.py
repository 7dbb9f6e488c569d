"""Views of the settings: what is stored and in effect, health, the connection check,
sampler presets and an adventure's samplers, connection profiles and hosted services.

Built by `service/settings.py`, `service/samplers.py`, `service/profiles.py`,
`service/hosted.py` and `llm.base.CheckReport`.
"""

from __future__ import annotations

from pydantic import Field, RootModel

from talekeeper.context.generation import GenerationSettings
from talekeeper.llm import services
from talekeeper.llm.settings import ModelSettings
from talekeeper.views.base import Sparse, View


class ModelSettingsView(Sparse, ModelSettings):
    """Model settings; only the fields that are set appear. Never the API key itself."""

    has_api_key: bool | None = Field(None, description="True when a key is stored (sealed).")


class StoredSettings(View):
    """The settings as stored, before the environment and flags apply."""

    model: ModelSettingsView = Field(
        description="The model settings as stored (before environment and flags)."
    )
    generation: GenerationSettings = Field(description="The generation settings in effect.")


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
    process: int = Field(
        description="The answering app process's id (with several, which one answered)."
    )


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


class _Numbers(Sparse):
    min_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    dry_multiplier: float | None = Field(None, description="DRY: llama.cpp server, KoboldCpp.")
    dry_base: float | None = None
    dry_allowed_length: int | None = None
    xtc_threshold: float | None = Field(None, description="XTC: llama.cpp server, KoboldCpp.")
    xtc_probability: float | None = None
    seed: int | None = None


class SamplerValues(_Numbers):
    """Samplers that are set (a field left out is not set here)."""

    logit_bias: str | None = Field(None, description="“token: bias” pairs, comma-separated.")
    banned_phrases: str | None = Field(None, description="Phrases never shown, separated by |.")
    stop: str | None = Field(None, description="Stop strings, separated by |.")


class SamplerPresets(RootModel[dict[str, SamplerValues]]):
    """Named presets: name → the samplers each sets."""


class EffectiveSamplers(_Numbers):
    """The samplers a turn asks the model for (only those set)."""

    logit_bias: dict[int, float] | None = None
    banned_phrases: list[str] | None = None
    stop: list[str] | None = None


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


class SamplersOfAdventure(View):
    """An adventure's samplers page: its title, every preset it may follow, its samplers."""

    title: str
    presets: SamplerPresets = Field(description="The starters, then the player's own.")
    samplers: AdventureSamplersView


# --- connection profiles, the choice of connection, hosted services ---------------------------


class ServiceView(View):
    """A service a connection can start from (llm/services.py)."""

    id: str
    label: str
    base_url: str = Field(
        description="Its documented OpenAI-compatible base URL ('' for a custom server)."
    )
    provider: str = Field(description="openai or ollama (native API).")
    hosted: bool = Field(description="On the internet: the story is sent there once allowed.")
    needs_key: bool
    key_help: str
    notes: str
    host: str


def service_views() -> list[ServiceView]:
    """Every service a connection can start from, for the JSON answer and the pages' pickers."""
    return [ServiceView.model_validate(s, from_attributes=True) for s in services.SERVICES]


class ProfileView(View):
    """A connection profile; its key is never shown, only whether one is kept."""

    id: int
    name: str
    service: str
    service_label: str
    provider: str
    endpoint: str
    host: str
    hosted: bool = Field(description="Its host is a hosted service on the internet.")
    allowed: bool = Field(description="Its host is allowed to receive the story.")
    model: str | None
    mode: str
    has_key: bool
    samplers: SamplerValues
    context_budget: int | None


class ConnectionChoiceView(View):
    """One connection a player can pick."""

    use: int | str = Field(description="A profile's id, `embedded` or `server`.")
    label: str
    sent_to: str | None = Field(description="The hosted service it sends the story to, if any.")


class ConnectionView(View):
    """Which connection narrates (for an adventure, or by default), and the choices."""

    use: int | str = Field(description="What narrates: a profile's id, `embedded` or `server`.")
    chosen_by: str = Field(description="`adventure`, `default` or `none` (the server settings).")
    name: str
    model: str = Field(description="The model in use, in words.")
    sent_to: str | None = Field(description="The hosted service the story goes to, if any.")
    choices: list[ConnectionChoiceView]


class ConnectionChoice(View):
    """The body that picks a connection."""

    use: int | str | None = Field(
        None, description="A profile's id, `embedded`, `server`, or null (follow the default)."
    )


class HostedServiceView(View):
    """A hosted service allowed to receive the story."""

    host: str
    service: str
    allowed_at: str | None
    sentence: str = Field(description="What allowing it means, in one sentence.")


class ModelInfoView(View):
    """A model a service offers."""

    id: str
    name: str
    context: int | None = Field(description="Its context window in tokens, where said.")
    cost_per_turn: str = Field(
        description="An estimate for one full turn, where priced ('' otherwise)."
    )
    supported: list[str] | None = Field(description="Request fields it takes, where said.")


class ModelListView(View):
    """The models a connection's service offers."""

    models: list[ModelInfoView]
    turn_size: str = Field(description="The turn the cost estimate is for, in words.")
