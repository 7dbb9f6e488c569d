"""Sampler presets and each adventure's own samplers, offered as the server can take them.

The generation settings hold the installation's samplers (min-p, top-k, penalties, DRY,
XTC, logit bias, banned phrases, stop strings, seed). A **preset** is a named set of them:
three starters ship with talekeeper (`STARTERS`, each with a plain description) and a
player can keep their own. An **adventure** may follow a preset and/or set values of its
own: own values win over the preset, which wins over the connection profile's, which wins
over the installation's. `for_adventure` gives the turn pipeline the result as request
fields; a server that does not take a field never gets it (llm/backends.py), and pages
offer only the fields the server in use takes (`offered`). Presets and choices are kept as
settings rows (JSON), validated by the same model as the settings page.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo
from sqlalchemy.orm import Session

from talekeeper.context.generation import GenerationSettings
from talekeeper.errors import Invalid, NotFound
from talekeeper.llm.backends import SAMPLERS, Backend
from talekeeper.service.connection_in_force import extras, generation_settings
from talekeeper.service.unit_of_work import reading, writing
from talekeeper.store import owner, setting_rows
from talekeeper.store.secrets import SecretUnreadable
from talekeeper.views.settings import (
    AdventureSamplersView,
    EffectiveSamplers,
    SamplerChoice,
    SamplerPresets,
    SamplersOfAdventure,
    SamplerValues,
)

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

PRESETS_KEY = "sampler_presets"
FIELDS = SAMPLERS  # every optional sampler, in the order pages show them
MAX_NAME, MAX_PRESETS = 40, 50
# Samplers every connection is offered on the Settings page (the installation's values are
# every connection's base); the others only where the server in use takes them.
COMMON = ("min_p", "top_k", "repetition_penalty", "frequency_penalty", "presence_penalty",
          "banned_phrases", "stop", "seed")  # fmt: skip


@dataclass(frozen=True)
class Starter:
    description: str
    values: dict[str, Any]


# Starter presets. Each sets values for several kinds of server; only those the server in
# use takes are sent (a preset with DRY works on OpenAI too, without its DRY).
STARTERS: dict[str, Starter] = {
    "Steady": Starter(
        "Keeps the story on course with little repetition: a good first choice for any model.",
        {"min_p": 0.05, "repetition_penalty": 1.05, "frequency_penalty": 0.1,
         "dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2},
    ),
    "Fresh": Starter(
        "Livelier wording for a model that keeps saying the same things: repeated phrases "
        "are pushed away, and now and then the most obvious word is passed over.",
        {"min_p": 0.05, "repetition_penalty": 1.1, "frequency_penalty": 0.3,
         "presence_penalty": 0.3, "dry_multiplier": 1.0, "dry_base": 1.75,
         "dry_allowed_length": 2, "xtc_threshold": 0.1, "xtc_probability": 0.5},
    ),
    "Focused": Starter(
        "Plainer, steadier prose for a small model or a story that wanders: only the "
        "likeliest words are considered.",
        {"top_k": 40, "min_p": 0.1, "repetition_penalty": 1.1},
    ),
}  # fmt: skip


def label(name: str, info: FieldInfo | None = None) -> str:
    """What a player reads for a setting: its declared title (context/generation)."""
    info = info or GenerationSettings.model_fields.get(name)
    return (info.title if info else None) or name.replace("_", " ").capitalize()


def suggested(name: str) -> str:
    """The suggested value its description names ("Suggested: 0.05"), or ''."""
    info = GenerationSettings.model_fields.get(name)
    found = (
        re.search(r"Suggested: ([0-9][0-9.]*?)\.?(?:\s|$)", info.description or "")
        if info
        else None
    )
    return found.group(1) if found else ""


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
    frequency_penalty: float | str | None = None
    presence_penalty: float | str | None = None
    dry_multiplier: float | str | None = None
    dry_base: float | str | None = None
    dry_allowed_length: int | str | None = None
    xtc_threshold: float | str | None = None
    xtc_probability: float | str | None = None
    logit_bias: str | None = None
    banned_phrases: str | None = None
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


def presets(session: Session) -> dict[str, dict[str, Any]]:
    """The player's own presets (the starters are `STARTERS`)."""
    return _row(session, owner.setting_key(PRESETS_KEY))


def every_preset(session: Session) -> dict[str, dict[str, Any]]:
    """The starters, then the player's own: name → values."""
    return {**{n: dict(s.values) for n, s in STARTERS.items()}, **presets(session)}


def save_preset(session: Session, name: str, values: dict[str, Any]) -> dict[str, Any]:
    name = " ".join((name or "").split())
    if not name or len(name) > MAX_NAME:
        raise SamplersInvalid(f"A preset needs a name of 1 to {MAX_NAME} characters.")
    if name.lower() in (n.lower() for n in STARTERS):
        raise SamplersInvalid(f"“{name}” is a starter preset; keep yours under another name.")
    stored = presets(session)
    if name not in stored and len(stored) >= MAX_PRESETS:
        raise SamplersInvalid(f"At most {MAX_PRESETS} presets; delete one first.")
    stored[name] = clean(values)
    setting_rows.write(session, owner.setting_key(PRESETS_KEY), stored)
    return stored[name]


def delete_preset(session: Session, name: str) -> None:
    if name in STARTERS:
        raise SamplersInvalid(f"“{name}” is a starter preset; it cannot be deleted.")
    stored = presets(session)
    if name not in stored:
        raise PresetNotFound(f"There is no preset named {name!r}.")
    del stored[name]
    setting_rows.write(session, owner.setting_key(PRESETS_KEY), stored)


def adventure_key(adventure_id: int) -> str:
    return f"adventure_samplers:{adventure_id}"


def adventure_choice(session: Session, adventure_id: int) -> dict[str, Any]:
    choice = _row(session, adventure_key(adventure_id))
    return {"preset": choice.get("preset"), "values": dict(choice.get("values") or {})}


def choice_keys(adventure_id: int) -> set[str]:
    """The settings rows an adventure's choice and the player's presets are read from (for
    a unit of work's prefetch)."""
    return {adventure_key(adventure_id), owner.setting_key(PRESETS_KEY)}


def preset_of(session: Session, adventure_id: int) -> tuple[str | None, list[str]]:
    """The preset this adventure follows, and the names of the player's own presets (the
    play page's choice; the starters are `STARTERS`)."""
    own = [name for name in presets(session) if name not in STARTERS]
    return adventure_choice(session, adventure_id)["preset"], own


def set_adventure_choice(
    session: Session, adventure_id: int, preset: str | None, values: dict[str, Any]
) -> dict[str, Any]:
    if preset and preset not in every_preset(session):
        raise SamplersInvalid(f"There is no preset named {preset!r}; save it first.")
    choice = {"preset": preset or None, "values": clean(values)}
    setting_rows.write(session, adventure_key(adventure_id), choice)
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
        chosen.update(every_preset(session).get(choice["preset"], {}))  # deleted: ignored
    chosen.update(choice["values"])
    return GenerationSettings(**{**generation.model_dump(), **chosen}).samplers()


# --- entry points: each owns its transaction (and the adventure's lock when it writes) -----


def list_presets(tk: Talekeeper) -> SamplerPresets:
    """The player's own presets (the starters are `STARTERS`)."""
    with tk.db.session() as session:
        return SamplerPresets.model_validate(presets(session))


def keep_preset(tk: Talekeeper, name: str, values: dict[str, Any]) -> SamplerValues:
    with tk.db.session() as session:
        return SamplerValues.model_validate(save_preset(session, name, values))


def forget_preset(tk: Talekeeper, name: str) -> None:
    with tk.db.session() as session:
        delete_preset(session, name)


def of_adventure(tk: Talekeeper, adventure_id: int) -> SamplersOfAdventure:
    """This adventure's title, preset and own values, every preset, and what its turns ask
    the model for (`effective`)."""
    with reading(tk, adventure_id) as (session, adventure):
        choice = adventure_choice(session, adventure_id)
        effective = for_adventure(
            session,
            adventure_id,
            generation_settings(session),
            extras(session, adventure_id).samplers,
        )
        return SamplersOfAdventure(
            title=adventure.title,
            presets=SamplerPresets.model_validate(every_preset(session)),
            samplers=AdventureSamplersView(
                preset=choice["preset"],
                values=SamplerValues.model_validate(choice["values"]),
                effective=EffectiveSamplers.model_validate(effective),
            ),
        )


def _choice_view(choice: dict[str, Any]) -> SamplerChoice:
    return SamplerChoice(
        preset=choice["preset"], values=SamplerValues.model_validate(choice["values"])
    )


def choose(
    tk: Talekeeper, adventure_id: int, preset: str | None, values: dict[str, Any], keep_as: str = ""
) -> SamplerChoice:
    """Set this adventure's preset and own values (optionally keeping the values as a
    preset too), in one transaction: a refusal keeps neither."""
    with writing(tk, adventure_id) as (session, _adventure):
        if keep_as:
            save_preset(session, keep_as, values)
        return _choice_view(set_adventure_choice(session, adventure_id, preset, values))


def starter_views() -> dict[str, dict[str, Any]]:
    return {
        name: {"description": s.description, "values": s.values} for name, s in STARTERS.items()
    }


def choose_preset(tk: Talekeeper, adventure_id: int, preset: str | None) -> SamplerChoice:
    """Follow `preset` (None: none), keeping the adventure's own values."""
    with writing(tk, adventure_id) as (session, _adventure):
        own = adventure_choice(session, adventure_id)["values"]
        return _choice_view(set_adventure_choice(session, adventure_id, preset, own))


# --- what the server in use takes ---------------------------------------------------------


@dataclass(frozen=True)
class Offer:
    """The samplers offered for a connection: what its server takes, in words."""

    server: str  # the server, as a player reads it ("llama.cpp server", "OpenRouter")
    taken: frozenset[str]

    def fields(self, values: dict[str, Any], common: bool = False) -> list[dict[str, Any]]:
        """Form rows for the samplers offered (and any set, said to be ignored)."""
        rows = []
        for name in FIELDS:
            value = values.get(name)
            offered = name in self.taken or name == "banned_phrases" or (common and name in COMMON)
            if not offered and value in (None, ""):
                continue
            info = GenerationSettings.model_fields[name]
            rows.append(
                {
                    "name": name,
                    "label": label(name),
                    "help": info.description or "",
                    "value": "" if value is None else value,
                    "suggested": suggested(name),
                    "ignored": name not in self.taken and name != "banned_phrases",
                    "text": name in ("logit_bias", "banned_phrases", "stop"),
                }
            )
        return rows

    def missing(self) -> list[str]:
        """The samplers this server does not take, by label (DRY and XTC said once each)."""
        names = [n for n in FIELDS if n not in self.taken and n != "banned_phrases"]
        words: list[str] = []
        for name in names:
            word = (
                "DRY"
                if name.startswith("dry_")
                else "XTC"
                if name.startswith("xtc_")
                else label(name)
            )
            if word not in words:
                words.append(word)
        return words


async def offered(tk: Talekeeper, adventure_id: int | None = None) -> Offer:
    """The samplers the connection in force (this adventure's, or by default) takes,
    asked of its server once (a server that does not answer: what is assumed of it)."""
    try:
        settings = await asyncio.to_thread(tk.model_settings, adventure_id)
    except SecretUnreadable:  # asked without the key: the page still opens
        settings = await asyncio.to_thread(tk.shown_settings, adventure_id)
    return offer_of(await tk.provider(settings).backend())


def offer_of(backend: Backend) -> Offer:
    return Offer(backend.label, frozenset(n for n in FIELDS if backend.takes(n)))
