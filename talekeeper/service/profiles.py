"""Connection profiles: named ways to reach a model, and which one narrates.

A profile keeps a service preset (llm/services.py), its address, the model, the API key
(sealed, store/secrets.py — written and replaced, never read back), chat or completion
mode, samplers and a context budget. Which connection narrates is a choice:

    an adventure's own choice  >  the player's default  >  the server settings

where a choice is a profile, the built-in model ("embedded") or the server settings
("server": the installation's model settings, `PUT /api/settings`, which environment
variables and flags still override for a run). With accounts on each player keeps their
own profiles and choices; a player's profile may only reach a hosted service a host
allowed (service/hosted.py) — a server on the host's own network is the host's to name.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.errors import Forbidden, Invalid, NotFound
from talekeeper.llm import services
from talekeeper.llm.policy import check_endpoint
from talekeeper.llm.settings import ModelSettings, operator_allows_remote
from talekeeper.service import hosted
from talekeeper.service.connection_in_force import (
    DEFAULT_KEY,
    EMBEDDED,
    SERVER,
    Choice,
    adventure_key,
    allowed_hosts,
    effective_model_settings,
    resolve,
    settings_of,
)
from talekeeper.service.samplers import Offer, SamplersInvalid, clean, offer_of
from talekeeper.service.unit_of_work import reading
from talekeeper.store import owner, setting_rows
from talekeeper.store.models import ConnectionProfile, Setting
from talekeeper.store.secrets import KeyBox, SecretUnreadable
from talekeeper.views.settings import (
    ConnectionChoiceView,
    ConnectionView,
    ModelInfoView,
    ModelListView,
    ProfileView,
    SamplerValues,
)

if TYPE_CHECKING:
    from talekeeper.llm.policy import Resolver
    from talekeeper.service.app import Talekeeper

MAX_PROFILES = 50


class ProfileInvalid(Invalid):
    pass


class ProfileNotFound(NotFound):
    pass


class HostedOnly(Forbidden):
    def __init__(self, host: str) -> None:
        super().__init__(
            f"A player's connection may only reach a hosted service a host allowed; {host} "
            "is not one. Ask a host to allow it, or to set it up in the server settings."
        )


class ProfileIn(BaseModel):
    """A profile as a page or the API submits it. `api_key`: a new key (empty: keep the
    stored one); `forget_key`: remove the stored key."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=80)
    service: str = Field("custom", description="A preset: " + ", ".join(services.BY_ID))
    endpoint: str | None = Field(None, description="Empty: the preset's own address.")
    model: str | None = Field(None, max_length=200)
    mode: Literal["chat", "completion"] = "chat"
    api_key: str | None = Field(None, max_length=500, description="Write-only.")
    forget_key: bool = False
    samplers: dict[str, Any] = Field(default_factory=dict)
    context_budget: int | None = Field(None, ge=512, le=131072)

    @field_validator("name", "endpoint", "model", "api_key", mode="before")
    @classmethod
    def _trimmed(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = " ".join(value.split()) if value.strip() else None
        return value

    @field_validator("context_budget", mode="before")
    @classmethod
    def _blank_budget(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


# --- reading --------------------------------------------------------------------------------


def _visible(session: Session) -> Any:
    return owner.where_visible(select(ConnectionProfile), ConnectionProfile)


def all_profiles(session: Session) -> list[ConnectionProfile]:
    return list(session.scalars(_visible(session).order_by(ConnectionProfile.name)))


def get_profile(session: Session, profile_id: int) -> ConnectionProfile:
    profile = session.get(ConnectionProfile, profile_id)
    if profile is None or not owner.visible(profile):
        raise ProfileNotFound(f"There is no connection profile {profile_id}.")
    return profile


def view(profile: ConnectionProfile, allowed: tuple[str, ...] = ()) -> ProfileView:
    """A profile as pages and the API show it: never its key, only whether one is kept."""
    preset = services.service(profile.service)
    host = services.host_of(profile.endpoint)
    return ProfileView(
        id=profile.id,
        name=profile.name,
        service=preset.id,
        service_label=preset.label,
        provider=profile.provider,
        endpoint=profile.endpoint,
        host=host,
        hosted=preset.hosted or hosted.sent_to(profile.endpoint, allowed) is not None,
        allowed=host in allowed,
        model=profile.model,
        mode=profile.mode,
        has_key=bool(profile.key_sealed),
        samplers=SamplerValues.model_validate(profile.samplers or {}),
        context_budget=profile.context_budget,
    )


# --- writing --------------------------------------------------------------------------------


def _checked(
    data: ProfileIn, session: Session, resolver: Resolver | None
) -> tuple[services.Service, str]:
    """The preset and the address to save, or a refusal that names what is wrong."""
    preset = services.BY_ID.get(data.service)
    if preset is None:
        raise ProfileInvalid(f"Unknown service {data.service!r}.")
    endpoint = data.endpoint or preset.base_url
    if not endpoint:
        raise ProfileInvalid("Give the server's address, for example http://127.0.0.1:8080/v1.")
    try:
        ModelSettings(provider=preset.provider, endpoint=endpoint, model=data.model)
    except ValidationError as exc:
        raise ProfileInvalid(f"endpoint: {exc.errors()[0]['msg']}") from exc
    allowed = allowed_hosts(session)
    host = services.host_of(endpoint)
    if not owner.may_manage_installation() and host not in allowed:
        raise HostedOnly(host)
    check_endpoint(endpoint, operator_allows_remote(), resolver, allowed)
    return preset, endpoint


def _samplers(values: dict[str, Any]) -> dict[str, Any]:
    try:
        return clean(values)
    except SamplersInvalid as exc:
        raise ProfileInvalid(str(exc)) from exc


def save(
    session: Session,
    data: ProfileIn,
    keys: KeyBox,
    profile_id: int | None = None,
    resolver: Resolver | None = None,
) -> ConnectionProfile:
    """Create (no `profile_id`) or replace a profile; nothing is stored unless all is valid."""
    preset, endpoint = _checked(data, session, resolver)
    samplers = _samplers(data.samplers)
    name_taken = session.scalar(
        _visible(session).where(
            ConnectionProfile.name == data.name, ConnectionProfile.id != (profile_id or 0)
        )
    )
    if name_taken is not None:
        raise ProfileInvalid(f"There is already a connection named “{data.name}”.")
    if profile_id is None:
        if len(all_profiles(session)) >= MAX_PROFILES:
            raise ProfileInvalid(f"At most {MAX_PROFILES} connections; delete one first.")
        profile = ConnectionProfile(owner_id=owner.current(), samplers={})
        session.add(profile)
    else:
        profile = get_profile(session, profile_id)
    if preset.needs_key and not data.api_key and not (profile.key_sealed and not data.forget_key):
        raise ProfileInvalid(f"{preset.label} needs an API key. {preset.key_help}".strip())
    profile.name = data.name
    profile.service = preset.id
    profile.provider = preset.provider
    profile.endpoint = endpoint
    profile.model = data.model
    profile.mode = data.mode
    profile.samplers = samplers
    profile.context_budget = data.context_budget
    if data.api_key:
        profile.key_sealed = keys.seal(data.api_key)
    elif data.forget_key:
        profile.key_sealed = None
    session.flush()
    return profile


def delete(session: Session, profile_id: int) -> None:
    session.delete(get_profile(session, profile_id))


# --- which connection narrates ---------------------------------------------------------------


def parse_choice(value: Any) -> Choice | None:
    """A choice as a form or the API gives it: "embedded", "server", a profile id, or
    empty (None: follow the default)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if value in (EMBEDDED, SERVER):
        return value
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ProfileInvalid(
            f"{value!r} is no connection: give a profile's number, “embedded” or “server”."
        ) from None
    return number


def _store_choice(session: Session, key: str, choice: Choice | None) -> None:
    if choice is not None and choice not in (EMBEDDED, SERVER):
        get_profile(session, int(choice))  # refuses an unknown or someone else's profile
    if choice is None:
        row = session.get(Setting, key)
        if row is not None:
            session.delete(row)
        return
    setting_rows.write(session, key, {"use": choice})


def choose_default(session: Session, choice: Choice | None) -> None:
    _store_choice(session, owner.setting_key(DEFAULT_KEY), choice)


def choose_for_adventure(session: Session, adventure_id: int, choice: Choice | None) -> None:
    _store_choice(session, adventure_key(adventure_id), choice)


def choices(session: Session) -> list[ConnectionChoiceView]:
    """Every connection a player can pick, built-in model first."""
    allowed = allowed_hosts(session)
    found = [
        ConnectionChoiceView(use=EMBEDDED, label="Built-in model (demo quality)", sent_to=None),
        ConnectionChoiceView(use=SERVER, label="Server settings", sent_to=None),
    ]
    for profile in all_profiles(session):
        label = profile.name + (f" — {profile.model}" if profile.model else "")
        sent = hosted.sent_to(profile.endpoint, allowed)
        found.append(ConnectionChoiceView(use=profile.id, label=label, sent_to=sent))
    return found


# --- entry points (each owns its transaction) ------------------------------------------------


def list_profiles(tk: Talekeeper) -> list[ProfileView]:
    with tk.db.session() as session:
        allowed = allowed_hosts(session)
        return [view(p, allowed) for p in all_profiles(session)]


def read(tk: Talekeeper, profile_id: int) -> ProfileView:
    with tk.db.session() as session:
        return view(get_profile(session, profile_id), allowed_hosts(session))


def keep(tk: Talekeeper, data: ProfileIn, profile_id: int | None = None) -> ProfileView:
    with tk.db.session() as session:
        profile = save(session, data, tk.keys, profile_id, tk.resolver)
        return view(profile, allowed_hosts(session))


def forget(tk: Talekeeper, profile_id: int) -> None:
    with tk.db.session() as session:
        delete(session, profile_id)


def use_by_default(tk: Talekeeper, choice: Choice | None) -> None:
    with tk.db.session() as session:
        choose_default(session, choice)


def use_for_adventure(tk: Talekeeper, adventure_id: int, choice: Choice | None) -> None:
    """Switch this adventure's connection (no writer lock: a turn in flight has read its
    own already, and the next turn uses this one)."""
    with reading(tk, adventure_id) as (session, _adventure):
        choose_for_adventure(session, adventure_id, choice)


def sent_to(settings: ModelSettings) -> str | None:
    """The hosted service these settings send the story to (None: a local server)."""
    if settings.resolved_provider() == "embedded":
        return None
    return hosted.sent_to(settings.endpoint, settings.allowed_hosts)


def connection_view(tk: Talekeeper, adventure_id: int | None = None) -> ConnectionView:
    """Which connection narrates (this adventure's, or by default), in words, and every
    connection that could."""
    with tk.db.session() as session:
        return connection_in(session, tk, adventure_id)[0]


def connection_in(
    session: Session, tk: Talekeeper, adventure_id: int | None
) -> tuple[ConnectionView, ModelSettings]:
    """`connection_view` in the caller's session, with the settings it describes (as pages
    show them: no key), the connection resolved once for both."""
    chosen = resolve(session, adventure_id, None)
    settings = effective_model_settings(session, tk.model_overrides, adventure_id, chosen=chosen)
    view = ConnectionView(
        use=chosen.use,
        chosen_by=chosen.chosen_by,
        name=chosen.name,
        model=tk.model_description(settings),
        sent_to=sent_to(settings),
        choices=choices(session),
    )
    return view, settings


def _profile_settings(tk: Talekeeper, profile_id: int) -> tuple[ModelSettings, int | None]:
    """The settings a profile talks to its server with (key revealed), and its budget."""
    with tk.db.session() as session:
        profile = get_profile(session, profile_id)
        try:
            values = settings_of(profile, tk.keys)
        except SecretUnreadable:  # its page must open, for the key to be entered again
            values = settings_of(profile, None)
        budget = profile.context_budget
        allowed = allowed_hosts(session)
    settings = ModelSettings(**values, allow_remote=operator_allows_remote(), allowed_hosts=allowed)
    return settings, budget


async def offered_for(tk: Talekeeper, profile_id: int) -> Offer:
    """The samplers a profile's server takes (asked of it once)."""
    settings, _budget = await asyncio.to_thread(_profile_settings, tk, profile_id)
    return offer_of(await tk.provider(settings).backend())


async def models_of(tk: Talekeeper, profile_id: int) -> ModelListView:
    """The models a profile's service offers, with their context and, where the service
    prices them, an estimate of one full turn (a prompt filling the budget, a whole reply)."""
    from talekeeper.context.budget import DEFAULT_CAP, reply_tokens
    from talekeeper.llm.catalog import cost_words

    settings, budget = await asyncio.to_thread(_profile_settings, tk, profile_id)
    provider = tk.provider(settings)
    listed = await provider.catalog()
    generation = tk.generation()
    prompt = budget or DEFAULT_CAP
    reply = reply_tokens(generation.max_tokens, generation.reply_length, prompt, inline=True)
    models = [
        ModelInfoView(
            id=info.id,
            name=info.name,
            context=info.context,
            cost_per_turn=cost_words(info.turn_cost(min(prompt, info.context or prompt), reply)),
            supported=sorted(info.supported) if info.supported is not None else None,
        )
        for info in listed
    ]
    return ModelListView(
        models=models,
        turn_size=f"a turn of up to {prompt:,} prompt tokens and a {reply:,}-token reply",
    )
