"""Settings: what the player stored, overridden by the environment, overridden by flags.

Stored values live in the `settings` table and are edited on the settings page or with
`PUT /api/settings`. `TALEKEEPER_ENDPOINT` / `TALEKEEPER_MODEL` (and a few more) override
them for one run; CLI flags override both. Whether a remote endpoint may be used is an
operator's decision, so `allow_remote` comes only from the environment, never from a request.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.orm import Session

from talekeeper.context.generation import GenerationSettings
from talekeeper.context.settings import ContextSettings, context_settings, update_context_settings
from talekeeper.errors import Forbidden, Invalid
from talekeeper.llm.policy import check_endpoint
from talekeeper.llm.settings import ModelSettings, operator_allows_remote
from talekeeper.service import profiles
from talekeeper.service.connection_in_force import (
    ENV_OVERRIDES,
    PLAYER_KEYS,
    allowed_hosts,
    generation_settings,
    stored_value,
)
from talekeeper.store import owner, setting_rows
from talekeeper.store.secrets import KeyBox
from talekeeper.views.settings import ModelSettingsView, SettingsView, StoredSettings

if TYPE_CHECKING:
    from talekeeper.llm.policy import Resolver
    from talekeeper.service.app import Talekeeper

ALLOW_REMOTE_ENV = "TALEKEEPER_ALLOW_REMOTE_ENDPOINT"


class SettingsUpdate(BaseModel):
    """The body of `PUT /api/settings`: any subset of the two groups."""

    model_config = ConfigDict(extra="forbid")

    model: dict[str, Any] | None = None
    generation: dict[str, Any] | None = None


class SettingsError(Invalid):
    pass


class HostOnly(Forbidden):
    def __init__(self) -> None:
        super().__init__("Only a host of this talekeeper can change the model it uses.")


def may_change_model() -> bool:
    """Whether this request may change the model settings (a host, or accounts off)."""
    return owner.may_manage_installation()


def stored_settings(session: Session) -> StoredSettings:
    """What is stored, as pages and the API show it: never a key, only whether one is kept."""
    model = stored_value(session, "model")
    has_key = bool(model.pop("api_key", None) or model.pop("api_key_sealed", None))
    model.pop("api_key_sealed", None)
    if has_key:
        model["has_api_key"] = True
    try:
        shown = ModelSettingsView.model_validate(model)
    except ValidationError:  # stored by an older version: shown as it is, to be corrected
        shown = ModelSettingsView.model_construct(**model)
    return StoredSettings(model=shown, generation=generation_settings(session))


def overridden_fields(flag_overrides: dict[str, Any] | None = None) -> dict[str, str]:
    """Which model fields are fixed by the environment or flags for this run, and by what."""
    result = {
        field: f"environment variable {var}"
        for var, field in ENV_OVERRIDES.items()
        if os.environ.get(var)
    }
    for key, value in (flag_overrides or {}).items():
        if value is not None:
            result[key] = "a command-line flag"
    return result


def update_settings(
    session: Session,
    update: SettingsUpdate,
    keys: KeyBox | None = None,
    resolver: Resolver | None = None,
) -> StoredSettings:
    """Validate and store new values; nothing is stored unless everything validates. A new
    API key is stored sealed (`keys`); `"api_key": null` forgets the stored one."""
    new_model = None
    if update.model is not None and not may_change_model():
        raise HostOnly()
    if update.model is not None:
        stored = stored_value(session, "model")
        sealed = stored.pop("api_key_sealed", None)
        plain = stored.pop("api_key", None)  # stored before keys were sealed
        given = dict(update.model)
        key = given.pop("api_key", "")
        merged = {**stored, **given}
        for never in ("allow_remote", "allowed_hosts", "has_api_key", "api_key_sealed"):
            merged.pop(never, None)  # an operator's (or a host's) decision, never a field
        merged = {k: v for k, v in merged.items() if v not in ("",)}
        try:
            model = ModelSettings(**merged, api_key=key or None)
        except ValidationError as exc:
            raise SettingsError(_validation_message(exc, "model")) from exc
        if model.endpoint:
            check_endpoint(
                model.endpoint, operator_allows_remote(), resolver, allowed_hosts(session)
            )
        new_model = model.model_dump(
            exclude_none=True, exclude={"allow_remote", "allowed_hosts", "api_key"}
        )
        if key is None:  # `"api_key": null`: forget the stored key
            sealed = plain = None
        elif model.key() is not None:
            plain = model.key()  # a new key replaces the stored one
        if plain is not None:
            if keys is None:
                raise SettingsError("An API key can be stored only through the application.")
            sealed = keys.seal(plain)
        if sealed:
            new_model["api_key_sealed"] = sealed
    new_generation = None
    if update.generation is not None:
        try:
            generation = GenerationSettings(
                **{**stored_value(session, "generation"), **update.generation}
            )
        except ValidationError as exc:
            raise SettingsError(_validation_message(exc, "generation")) from exc
        new_generation = generation.model_dump()
    for key, value in (("model", new_model), ("generation", new_generation)):
        if value is None:
            continue
        key = owner.setting_key(key) if key in PLAYER_KEYS else key
        setting_rows.write(session, key, value)
    return stored_settings(session)


def _validation_message(exc: ValidationError, group: str) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in (group, *error["loc"]))
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


# --- entry points (each owns its transaction) ------------------------------------------------


def stored(tk: Talekeeper) -> StoredSettings:
    """What is stored (model and generation), before environment and flags apply."""
    with tk.db.session() as session:
        return stored_settings(session)


def settings_view(tk: Talekeeper) -> SettingsView:
    """The stored settings, what is in effect for this run and why, and the model in use."""
    shown = tk.shown_settings()
    return SettingsView(
        model=stored(tk).model,
        generation=tk.generation(),
        effective_model=ModelSettingsView(**shown.model_dump(exclude={"api_key", "allowed_hosts"})),
        overridden=overridden_fields(tk.model_overrides),
        model_description=tk.model_description(shown),
    )


def save(
    tk: Talekeeper, update: SettingsUpdate, context: dict[str, Any] | None = None
) -> StoredSettings:
    """Store model and generation settings (and context settings when given): all or nothing."""
    with tk.db.session() as session:
        result = update_settings(session, update, tk.keys, tk.resolver)
        if update.model is not None:  # the server settings, just saved, are what narrates
            profiles.choose_default(session, None)
        if context is not None:
            update_context_settings(session, context)
        return result


def context_settings_of(tk: Talekeeper) -> ContextSettings:
    with tk.db.session() as session:
        return context_settings(session)


def save_context_settings(tk: Talekeeper, values: dict[str, Any]) -> ContextSettings:
    """Merge and validate; a ValidationError becomes a SettingsError (422) and stores nothing."""
    try:
        with tk.db.session() as session:
            return update_context_settings(session, values)
    except ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise SettingsError(detail) from exc
