"""The connection in force: which one narrates, and the model settings it makes.

    an adventure's own choice  >  the player's default  >  the server settings

where a choice is a connection profile (service/profiles.py), the built-in model
("embedded") or the server settings ("server", service/settings.py); the environment and
CLI flags override the result for one run, and the hosts a host allowed (service/hosted.py)
travel with it. Everything here reads in the caller's transaction and never takes the
application object: the application object itself is built on it (`Talekeeper.model_settings`,
`generation`), so the modules that do take it — profiles, settings, hosted, samplers — import
this one and it imports none of them (`tests/test_layers.py` finds no circle).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError
from sqlalchemy.orm import Session

from talekeeper.context.generation import GenerationSettings
from talekeeper.llm.settings import ModelSettings, operator_allows_remote
from talekeeper.store import owner, setting_rows
from talekeeper.store.models import ConnectionProfile, Setting
from talekeeper.store.secrets import KeyBox

DEFAULT_KEY = "connection"
HOSTED_KEY = "hosted_services"  # the hosted services a host allowed (service/hosted.py)
EMBEDDED, SERVER = "embedded", "server"
Choice = int | Literal["embedded", "server"]

ENV_OVERRIDES = {
    "TALEKEEPER_ENDPOINT": "endpoint",
    "TALEKEEPER_MODEL": "model",
    "TALEKEEPER_PROVIDER": "provider",
    "TALEKEEPER_API_KEY": "api_key",
    "TALEKEEPER_MODE": "mode",
    "TALEKEEPER_EMBEDDED_MODEL": "embedded_model_path",
}
# Fields that choose the connection itself: when the environment or a flag sets any of
# them, the operator has fixed the model for this run and no profile is used (a profile's
# key is never sent to an address it was not saved for).
CONNECTION_FIELDS = {"endpoint", "provider", "model", "api_key", "mode"}

# With accounts on, each player keeps generation settings of their own (falling back to the
# installation's); the model endpoint is the host's, one for everyone.
PLAYER_KEYS = {"generation"}


def stored_value(session: Session, key: str) -> dict[str, Any]:
    """A settings row's value (the player's own first, for `PLAYER_KEYS`), or {}."""
    row = None
    own = owner.setting_key(key) if key in PLAYER_KEYS else key
    if own != key:
        row = setting_rows.row(session, own)
    row = row or setting_rows.row(session, key)
    return dict(row.value) if row and isinstance(row.value, dict) else {}


def env_model_overrides(environ: dict[str, str] | None = None) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    return {field: environ[var] for var, field in ENV_OVERRIDES.items() if environ.get(var)}


def hosted_permissions(session: Session) -> dict[str, dict[str, Any]]:
    """host → {"allowed_at": ISO time}, as stored."""
    row = setting_rows.row(session, HOSTED_KEY)
    value = row.value if row is not None and isinstance(row.value, dict) else {}
    return {str(h): dict(v) if isinstance(v, dict) else {} for h, v in value.items()}


def allowed_hosts(session: Session) -> tuple[str, ...]:
    return tuple(sorted(hosted_permissions(session)))


def generation_settings(session: Session) -> GenerationSettings:
    try:
        return GenerationSettings(**stored_value(session, "generation"))
    except ValidationError:
        return GenerationSettings()


# --- which connection narrates ---------------------------------------------------------------


def adventure_key(adventure_id: int) -> str:
    return f"adventure_connection:{adventure_id}"


def setting_keys(adventure_id: int | None) -> set[str]:
    """The settings rows `resolve` reads (for a unit of work's prefetch)."""
    keys = {owner.setting_key(DEFAULT_KEY), HOSTED_KEY}
    return keys | ({adventure_key(adventure_id)} if adventure_id is not None else set())


def _choice_of(session: Session, key: str) -> Choice | None:
    row = setting_rows.row(session, key)
    value = row.value.get("use") if row is not None and isinstance(row.value, dict) else None
    if value in (EMBEDDED, SERVER):
        return value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def settings_of(profile: ConnectionProfile, keys: KeyBox | None) -> dict[str, Any]:
    """The model settings a profile stands for (its key revealed only with `keys`)."""
    values: dict[str, Any] = {
        "provider": profile.provider,
        "endpoint": profile.endpoint,
        "model": profile.model,
        "mode": profile.mode,
    }
    if profile.key_sealed and keys is not None:
        values["api_key"] = keys.reveal(profile.key_sealed)
    return values


@dataclass(frozen=True)
class Resolved:
    """The connection in force: where it came from, and what it adds to the settings."""

    use: Choice  # what narrates: a profile id, "embedded" or "server"
    chosen_by: Literal["adventure", "default", "none"]
    values: dict[str, Any] | None = None  # model settings (None: the server settings)
    samplers: dict[str, Any] = field(default_factory=dict)
    context_budget: int | None = None
    name: str = ""


def resolve(session: Session, adventure_id: int | None, keys: KeyBox | None) -> Resolved:
    """Which connection narrates this adventure (or, without one, by default)."""
    found: list[tuple[Choice | None, Literal["adventure", "default"]]] = []
    if adventure_id is not None:
        found.append((_choice_of(session, adventure_key(adventure_id)), "adventure"))
    found.append((_choice_of(session, owner.setting_key(DEFAULT_KEY)), "default"))
    for choice, chosen_by in found:
        if choice is None:
            continue
        if choice == EMBEDDED:
            return Resolved(EMBEDDED, chosen_by, {"provider": "embedded"}, name="Built-in model")
        if choice == SERVER:
            return Resolved(SERVER, chosen_by, name="Server settings")
        profile = session.get(ConnectionProfile, int(choice))
        if profile is None or not owner.visible(profile):
            continue  # deleted since: the next choice down
        return Resolved(
            profile.id,
            chosen_by,
            settings_of(profile, keys),
            dict(profile.samplers or {}),
            profile.context_budget,
            profile.name,
        )
    return Resolved(SERVER, "none", name="Server settings")


@dataclass(frozen=True)
class Extras:
    """What the connection in force adds to a turn besides where it goes."""

    samplers: dict[str, Any] = field(default_factory=dict)
    context_budget: int | None = None

    def applied_to(self, generation: GenerationSettings) -> GenerationSettings:
        if self.context_budget is None:
            return generation
        return generation.model_copy(update={"context_budget": self.context_budget})


def extras(session: Session, adventure_id: int | None) -> Extras:
    """The chosen profile's samplers and context budget (none when the environment fixes
    the connection for this run: `CONNECTION_FIELDS`)."""
    if CONNECTION_FIELDS & env_model_overrides().keys():
        return Extras()
    chosen = resolve(session, adventure_id, None)
    return Extras(chosen.samplers, chosen.context_budget)


# --- the model settings in force -------------------------------------------------------------


def _server_values(session: Session, keys: KeyBox | None) -> dict[str, Any]:
    """The server settings as stored, their sealed key revealed only with `keys`."""
    values = stored_value(session, "model")
    values.pop("allow_remote", None)
    values.pop("allowed_hosts", None)
    sealed = values.pop("api_key_sealed", None)
    if sealed and keys is not None:
        values["api_key"] = keys.reveal(sealed)
    elif keys is None:
        values.pop("api_key", None)  # (a key stored before keys were sealed, until resealed)
    return values


def effective_model_settings(
    session: Session,
    flag_overrides: dict[str, Any] | None = None,
    adventure_id: int | None = None,
    keys: KeyBox | None = None,
    chosen: Resolved | None = None,
) -> ModelSettings:
    """The model settings in force: the connection chosen for the adventure (or by default),
    overridden by the environment, overridden by flags. The API key is filled in only with
    `keys` (what talks to the model); anything shown leaves it out. `chosen`: the connection
    the caller already resolved for `adventure_id` with the same `keys`, not resolved again."""
    setting_rows.prefetch(session, in_force_keys(adventure_id))
    flags = {k: v for k, v in (flag_overrides or {}).items() if v is not None}
    operator = {**env_model_overrides(), **flags}
    if CONNECTION_FIELDS & operator.keys():
        chosen = None  # the operator fixed the connection for this run
    elif chosen is None:
        chosen = resolve(session, adventure_id, keys)
    values = (
        dict(chosen.values)
        if chosen is not None and chosen.values is not None
        else _server_values(session, keys)
    )
    values.update(operator)
    values["allow_remote"] = operator_allows_remote()
    values["allowed_hosts"] = allowed_hosts(session)
    try:
        return ModelSettings(**values)
    except ValidationError:
        # A stored value that no longer validates must not lock the player out:
        # fall back to the overrides alone and let the settings page show the problem.
        return ModelSettings(
            **operator, allow_remote=operator_allows_remote(), allowed_hosts=allowed_hosts(session)
        )


def in_force_keys(adventure_id: int | None) -> set[str]:
    """The settings rows `effective_model_settings` reads (for a unit of work's prefetch)."""
    return {"model", *setting_keys(adventure_id)}


def seal_plain_key(session: Session, keys: KeyBox) -> None:
    """Seal an API key the server settings kept in plain text (before keys were sealed)."""
    row = session.get(Setting, "model")
    if row is None or not isinstance(row.value, dict) or not row.value.get("api_key"):
        return
    value = dict(row.value)
    value["api_key_sealed"] = keys.seal(str(value.pop("api_key")))
    row.value = value
