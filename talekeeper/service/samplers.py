"""Sampler presets and each adventure's own samplers.

The generation settings hold the installation's samplers (min-p, top-k, penalties, stop
strings, seed). A **preset** is a named set of them ("Tight", "Wild"); an **adventure** may
follow a preset and/or set values of its own, which win over the preset, which wins over
the installation's. `for_adventure` gives the turn pipeline the result as request fields.
Both are kept as settings rows (JSON), validated by the same model as the settings page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.orm import Session

from talekeeper.errors import Invalid, NotFound
from talekeeper.service.settings import GenerationSettings
from talekeeper.store import owner, setting_rows
from talekeeper.store.models import Setting

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

PRESETS_KEY = "sampler_presets"
FIELDS = ("min_p", "top_k", "repetition_penalty", "presence_penalty", "stop", "seed")
MAX_NAME, MAX_PRESETS = 40, 50


class SamplersInvalid(Invalid):
    pass


class PresetNotFound(NotFound):
    pass


class Samplers(BaseModel):
    """Any of the samplers; a field left out (or empty) is not set here."""

    model_config = ConfigDict(extra="forbid")

    min_p: float | str | None = None
    top_k: int | str | None = None
    repetition_penalty: float | str | None = None
    presence_penalty: float | str | None = None
    stop: str | None = None
    seed: int | str | None = None


def clean(values: dict[str, Any]) -> dict[str, Any]:
    """Validated values, unset ones dropped (checked by the settings page's own rules)."""
    try:
        given = Samplers.model_validate(values).model_dump(exclude_none=True)
        checked = GenerationSettings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SamplersInvalid(f"{where}: {first['msg']}") from exc
    return {k: getattr(checked, k) for k in given if getattr(checked, k) not in (None, "")}


def _row(session: Session, key: str) -> dict[str, Any]:
    row = setting_rows.row(session, key)
    return dict(row.value) if row is not None and isinstance(row.value, dict) else {}


def _write(session: Session, key: str, value: dict[str, Any]) -> None:
    row = session.get(Setting, key)
    if row is None:
        session.add(Setting(key=key, value=value))
    else:
        row.value = value


def presets(session: Session) -> dict[str, dict[str, Any]]:
    return _row(session, owner.setting_key(PRESETS_KEY))


def save_preset(session: Session, name: str, values: dict[str, Any]) -> dict[str, Any]:
    name = " ".join((name or "").split())
    if not name or len(name) > MAX_NAME:
        raise SamplersInvalid(f"A preset needs a name of 1 to {MAX_NAME} characters.")
    stored = presets(session)
    if name not in stored and len(stored) >= MAX_PRESETS:
        raise SamplersInvalid(f"At most {MAX_PRESETS} presets; delete one first.")
    stored[name] = clean(values)
    _write(session, owner.setting_key(PRESETS_KEY), stored)
    return stored[name]


def delete_preset(session: Session, name: str) -> None:
    stored = presets(session)
    if name not in stored:
        raise PresetNotFound(f"There is no preset named {name!r}.")
    del stored[name]
    _write(session, owner.setting_key(PRESETS_KEY), stored)


def adventure_key(adventure_id: int) -> str:
    return f"adventure_samplers:{adventure_id}"


def adventure_choice(session: Session, adventure_id: int) -> dict[str, Any]:
    choice = _row(session, adventure_key(adventure_id))
    return {"preset": choice.get("preset"), "values": dict(choice.get("values") or {})}


def set_adventure_choice(
    session: Session, adventure_id: int, preset: str | None, values: dict[str, Any]
) -> dict[str, Any]:
    if preset and preset not in presets(session):
        raise SamplersInvalid(f"There is no preset named {preset!r}; save it first.")
    choice = {"preset": preset or None, "values": clean(values)}
    _write(session, adventure_key(adventure_id), choice)
    return choice


def for_adventure(
    session: Session,
    adventure_id: int,
    generation: GenerationSettings,
    connection: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The samplers a turn of this adventure asks for, as `GenerationRequest` fields: the
    settings', then its connection profile's, its preset's and its own values."""
    choice = adventure_choice(session, adventure_id)
    chosen = {k: getattr(generation, k) for k in FIELDS}
    chosen.update(connection or {})
    if choice["preset"]:
        chosen.update(presets(session).get(choice["preset"], {}))  # a deleted preset: ignored
    chosen.update(choice["values"])
    return GenerationSettings(**{**generation.model_dump(), **chosen}).samplers()


# --- entry points: each owns its transaction (and the adventure's lock when it writes) -----


def list_presets(tk: Talekeeper) -> dict[str, dict[str, Any]]:
    with tk.db.session() as session:
        return presets(session)


def keep_preset(tk: Talekeeper, name: str, values: dict[str, Any]) -> dict[str, Any]:
    with tk.db.session() as session:
        return save_preset(session, name, values)


def forget_preset(tk: Talekeeper, name: str) -> None:
    with tk.db.session() as session:
        delete_preset(session, name)


def of_adventure(tk: Talekeeper, adventure_id: int) -> dict[str, Any]:
    """This adventure's title, preset and own values, every preset, and what its turns ask
    the model for (`effective`)."""
    from talekeeper.service.adventures import reading

    with reading(tk, adventure_id) as (session, adventure):
        return {
            "title": adventure.title,
            **adventure_choice(session, adventure_id),
            "presets": presets(session),
            "effective": for_adventure(session, adventure_id, tk.generation()),
        }


def choose(
    tk: Talekeeper, adventure_id: int, preset: str | None, values: dict[str, Any], keep_as: str = ""
) -> dict[str, Any]:
    """Set this adventure's preset and own values (optionally keeping the values as a
    preset too), in one transaction: a refusal keeps neither."""
    from talekeeper.service.adventures import writing

    with writing(tk, adventure_id) as (session, _adventure):
        if keep_as:
            save_preset(session, keep_as, values)
        return set_adventure_choice(session, adventure_id, preset, values)
