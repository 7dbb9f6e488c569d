"""Settings: what the player stored, overridden by the environment, overridden by flags.

Stored values live in the `settings` table and are edited on the settings page or with
`PUT /api/settings`. `TALEKEEPER_ENDPOINT` / `TALEKEEPER_MODEL` (and a few more) override
them for one run; CLI flags override both. Whether a remote endpoint may be used is an
operator's decision, so `allow_remote` comes only from the environment, never from a request.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy.orm import Session

from talekeeper.context.budget import DEFAULT_CAP, EMBEDDED_BUDGET
from talekeeper.context.settings import ContextSettings, context_settings, update_context_settings
from talekeeper.errors import Forbidden, Invalid
from talekeeper.llm.backends import NUMBERS
from talekeeper.llm.settings import ModelSettings, operator_allows_remote
from talekeeper.store import owner, setting_rows
from talekeeper.store.models import Setting
from talekeeper.store.secrets import KeyBox

if TYPE_CHECKING:
    from talekeeper.llm.policy import Resolver
    from talekeeper.service.app import Talekeeper

ENV_OVERRIDES = {
    "TALEKEEPER_ENDPOINT": "endpoint",
    "TALEKEEPER_MODEL": "model",
    "TALEKEEPER_PROVIDER": "provider",
    "TALEKEEPER_API_KEY": "api_key",
    "TALEKEEPER_MODE": "mode",
    "TALEKEEPER_EMBEDDED_MODEL": "embedded_model_path",
}
ALLOW_REMOTE_ENV = "TALEKEEPER_ALLOW_REMOTE_ENDPOINT"


OPTIONAL_NUMBERS = NUMBERS  # each left to the model server when empty
MAX_BIASES, MAX_PHRASES, LONGEST_PHRASE = 300, 50, 100


def parse_logit_bias(text: str) -> dict[int, float]:
    """ "1234: -100, 5678: 2" → {1234: -100.0, 5678: 2.0}; a ValueError names what is wrong."""
    found: dict[int, float] = {}
    for part in (p.strip() for p in text.replace("\n", ",").split(",")):
        if not part:
            continue
        token, sep, bias = part.partition(":")
        try:
            number, weight = int(token.strip()), float(bias.strip())
        except ValueError:
            raise ValueError(
                f"“{part[:40]}” is not a “token number: bias” pair (e.g. 1234: -100)"
            ) from None
        if not sep or not 0 <= number < 10**7 or not -100 <= weight <= 100:
            raise ValueError(
                f"“{part[:40]}”: a token number from 0 and a bias from -100 to 100, please"
            )
        found[number] = weight
    if len(found) > MAX_BIASES:
        raise ValueError(f"at most {MAX_BIASES} token biases")
    return found


def parse_phrases(text: str) -> list[str]:
    """ "a|b" (or one a line) → ["a", "b"]; a ValueError names what is too long."""
    phrases: list[str] = []
    for part in text.replace("\n", "|").split("|"):
        phrase = " ".join(part.split())
        if phrase and phrase.lower() not in (p.lower() for p in phrases):
            if len(phrase) > LONGEST_PHRASE:
                raise ValueError(f"a banned phrase is at most {LONGEST_PHRASE} characters")
            phrases.append(phrase)
    if len(phrases) > MAX_PHRASES:
        raise ValueError(f"at most {MAX_PHRASES} banned phrases")
    return phrases


class GenerationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(
        None,
        ge=16,
        le=4096,
        description=(
            "Longest narration per turn, in tokens. Empty: sized from the reply length and the "
            "model's context window (with room for the state block when the narrator writes one)."
        ),
    )
    reply_length: Literal["short", "medium", "long"] = Field(
        "medium",
        description=(
            "How long the narrator's replies should be: short (one to three sentences), medium "
            "(a paragraph), long (two or three paragraphs). The narrator is told, and its token "
            "limit follows."
        ),
    )
    temperature: float = Field(0.8, ge=0.0, le=2.0, description="Higher is more surprising.")
    top_p: float = Field(0.95, gt=0.0, le=1.0, description="Nucleus sampling cut-off.")
    # More samplers, each left to the model server when empty (llm/backends.SAMPLERS); a
    # page offers only those the connection's server takes.
    min_p: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Drop words less likely than this share of the likeliest. Suggested: 0.05. Empty: the server's default.",
    )
    top_k: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="Consider only this many likeliest words. Suggested: 40 for a small model, else empty. Empty: the server's default.",
    )
    repetition_penalty: float | None = Field(
        None,
        ge=0.5,
        le=2.0,
        description="Above 1 discourages repeating recent text. Suggested: 1.05 to 1.1. Empty: the server's default.",
    )
    frequency_penalty: float | None = Field(
        None,
        ge=-2.0,
        le=2.0,
        description="Above 0 discourages the words the reply has already used often. Suggested: 0.2. Empty: the server's default.",
    )
    presence_penalty: float | None = Field(
        None,
        ge=-2.0,
        le=2.0,
        description="Above 0 nudges towards new topics. Suggested: 0.2. Empty: the server's default.",
    )
    dry_multiplier: float | None = Field(
        None,
        ge=0.0,
        le=100.0,
        description="DRY (“don't repeat yourself”): how hard a phrase the story already has is pushed away when the model starts it again; 0 is off. Suggested: 0.8.",
    )
    dry_base: float | None = Field(
        None,
        ge=1.0,
        le=8.0,
        description="DRY: how fast that push grows with the length of the repeat. Suggested: 1.75.",
    )
    dry_allowed_length: int | None = Field(
        None,
        ge=1,
        le=100,
        description="DRY: repeats up to this many tokens long are let be (names, set phrases). Suggested: 2.",
    )
    xtc_threshold: float | None = Field(
        None,
        ge=0.0,
        le=0.5,
        description="XTC (“exclude top choices”): words at least this likely may be set aside for a less obvious one. Suggested: 0.1.",
    )
    xtc_probability: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="XTC: how often that happens; 0 is off. Suggested: 0.5.",
    )
    logit_bias: str = Field(
        "",
        max_length=4000,
        description="For the experienced: raise or lower single tokens of this model's tokenizer, as “token number: bias” pairs separated by commas (-100 bans one, e.g. “1234: -100, 5678: 2”). Banned phrases need no numbers.",
    )
    banned_phrases: str = Field(
        "",
        max_length=4000,
        description="Phrases the story must never contain, separated by | (e.g. “a testament to|shivers down her spine”). Kept out as the model writes: by the server where it can, otherwise the reply is stopped before the phrase and the model goes on; the text is never cut.",
    )
    stop: str = Field(
        "",
        max_length=400,
        description="Text that ends the narration at once, several separated by | (e.g. “\n> |###”).",
    )
    seed: int | None = Field(
        None,
        ge=0,
        le=2**31 - 1,
        description="The same seed and prompt give the same narration, where the server supports it. Empty: random.",
    )
    context_budget: int | None = Field(
        None,
        ge=512,
        le=131072,
        description=(
            "Most tokens of story and instructions sent each turn, the reply included. Empty: "
            f"the model server's own context window, up to {DEFAULT_CAP:,} (the embedded model: "
            f"{EMBEDDED_BUDGET:,} of its window, leaving room for the state pass); a number "
            "here caps it."
        ),
    )
    state_updates: Literal["auto", "inline", "structured", "off"] = Field(
        "auto",
        description=(
            "How the model reports what changed: 'inline' (a state block after the prose), "
            "'structured' (a second short request under a JSON Schema), 'off' (narrative only), "
            "'auto' (structured for the embedded model and Ollama, inline otherwise)."
        ),
    )

    contradictions: Literal["off", "flag", "retry"] = Field(
        "flag",
        description=(
            "When the narration says what the state does not (someone here who is elsewhere, "
            "a key you do not hold): 'flag' shows a warning under the turn, 'retry' tells it "
            "again once before it is written (both tellings are in Insights) and warns if it "
            "still clashes, 'off' says nothing. Changes the narration tells outright are read "
            "whatever this says."
        ),
    )

    @field_validator(*OPTIONAL_NUMBERS, mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        """A cleared form field means "the server's default", not zero."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("logit_bias")
    @classmethod
    def _bias_pairs(cls, value: str) -> str:
        parse_logit_bias(value)  # refuses what it cannot read, in words
        return value.strip()

    @field_validator("banned_phrases")
    @classmethod
    def _phrases(cls, value: str) -> str:
        parse_phrases(value)
        return value.strip()

    def samplers(self) -> dict[str, Any]:
        """The optional samplers that are set, as `GenerationRequest` fields."""
        chosen: dict[str, Any] = {
            name: getattr(self, name)
            for name in OPTIONAL_NUMBERS
            if getattr(self, name) is not None
        }
        stops = [s.replace("\\n", "\n") for s in self.stop.split("|") if s.strip()]
        if stops:
            chosen["stop"] = stops[:4]
        if self.logit_bias:
            chosen["logit_bias"] = parse_logit_bias(self.logit_bias)
        if self.banned_phrases:
            chosen["banned_phrases"] = parse_phrases(self.banned_phrases)
        return chosen

    @field_validator("context_budget", "max_tokens", mode="before")
    @classmethod
    def _blank_is_default(cls, value: object) -> object:
        # A form field left empty means "sized from the model".
        return None if isinstance(value, str) and not value.strip() else value


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


# With accounts on, each player keeps generation settings of their own (falling back to the
# installation's); the model endpoint is the host's, one for everyone.
PLAYER_KEYS = {"generation"}


def _stored(session: Session, key: str) -> dict[str, Any]:
    row = None
    own = owner.setting_key(key) if key in PLAYER_KEYS else key
    if own != key:
        row = setting_rows.row(session, own)
    row = row or setting_rows.row(session, key)
    return dict(row.value) if row and isinstance(row.value, dict) else {}


def may_change_model() -> bool:
    """Whether this request may change the model settings (a host, or accounts off)."""
    return owner.may_manage_installation()


def env_model_overrides(environ: dict[str, str] | None = None) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    found: dict[str, Any] = {
        field: environ[var] for var, field in ENV_OVERRIDES.items() if environ.get(var)
    }
    return found


# Fields that choose the connection itself: when the environment or a flag sets any of
# them, the operator has fixed the model for this run and no profile is used (a profile's
# key is never sent to an address it was not saved for).
CONNECTION_FIELDS = {"endpoint", "provider", "model", "api_key", "mode"}


def _server_values(session: Session, keys: KeyBox | None) -> dict[str, Any]:
    """The server settings as stored, their sealed key revealed only with `keys`."""
    values = _stored(session, "model")
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
) -> ModelSettings:
    """The model settings in force: the connection chosen for the adventure (or by default,
    service/profiles), overridden by the environment, overridden by flags. The API key is
    filled in only with `keys` (what talks to the model); anything shown leaves it out."""
    from talekeeper.service import hosted, profiles

    setting_rows.prefetch(session, {"model", *profiles.setting_keys(adventure_id)})
    flags = {k: v for k, v in (flag_overrides or {}).items() if v is not None}
    operator = {**env_model_overrides(), **flags}
    chosen = (
        profiles.resolve(session, adventure_id, keys)
        if not CONNECTION_FIELDS & operator.keys()
        else None
    )
    values = (
        dict(chosen.values)
        if chosen is not None and chosen.values is not None
        else _server_values(session, keys)
    )
    values.update(operator)
    values["allow_remote"] = operator_allows_remote()
    values["allowed_hosts"] = hosted.allowed_hosts(session)
    try:
        return ModelSettings(**values)
    except ValidationError:
        # A stored value that no longer validates must not lock the player out:
        # fall back to the overrides alone and let the settings page show the problem.
        return ModelSettings(
            **operator,
            allow_remote=operator_allows_remote(),
            allowed_hosts=hosted.allowed_hosts(session),
        )


def seal_plain_key(session: Session, keys: KeyBox) -> None:
    """Seal an API key the server settings kept in plain text (before keys were sealed)."""
    row = session.get(Setting, "model")
    if row is None or not isinstance(row.value, dict) or not row.value.get("api_key"):
        return
    value = dict(row.value)
    value["api_key_sealed"] = keys.seal(str(value.pop("api_key")))
    row.value = value


def generation_settings(session: Session) -> GenerationSettings:
    try:
        return GenerationSettings(**_stored(session, "generation"))
    except ValidationError:
        return GenerationSettings()


def stored_settings(session: Session) -> dict[str, Any]:
    """What is stored, as pages and the API show it: never a key, only whether one is kept."""
    model = _stored(session, "model")
    has_key = bool(model.pop("api_key", None) or model.pop("api_key_sealed", None))
    model.pop("api_key_sealed", None)
    if has_key:
        model["has_api_key"] = True
    return {"model": model, "generation": _stored(session, "generation")}


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
) -> dict[str, Any]:
    """Validate and store new values; nothing is stored unless everything validates. A new
    API key is stored sealed (`keys`); `"api_key": null` forgets the stored one."""
    from talekeeper.llm.policy import check_endpoint
    from talekeeper.service import hosted

    new_model = None
    if update.model is not None and not may_change_model():
        raise HostOnly()
    if update.model is not None:
        stored = _stored(session, "model")
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
                model.endpoint, operator_allows_remote(), resolver, hosted.allowed_hosts(session)
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
                **{**_stored(session, "generation"), **update.generation}
            )
        except ValidationError as exc:
            raise SettingsError(_validation_message(exc, "generation")) from exc
        new_generation = generation.model_dump()
    for key, value in (("model", new_model), ("generation", new_generation)):
        if value is None:
            continue
        key = owner.setting_key(key) if key in PLAYER_KEYS else key
        row = session.get(Setting, key)
        if row is None:
            session.add(Setting(key=key, value=value))
        else:
            row.value = value
    return stored_settings(session)


def _validation_message(exc: ValidationError, group: str) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in (group, *error["loc"]))
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


# --- entry points (each owns its transaction) ------------------------------------------------


def stored(tk: Talekeeper) -> dict[str, Any]:
    """What is stored (model and generation), before environment and flags apply."""
    with tk.db.session() as session:
        return stored_settings(session)


def settings_view(tk: Talekeeper) -> dict[str, Any]:
    """The stored settings, what is in effect for this run and why, and the model in use."""
    return {
        **stored(tk),
        "effective_model": tk.shown_settings().model_dump(exclude={"api_key", "allowed_hosts"}),
        "overridden": overridden_fields(tk.model_overrides),
        "generation": tk.generation().model_dump(),
        "model_description": tk.model_description(),
    }


def save(
    tk: Talekeeper, update: SettingsUpdate, context: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Store model and generation settings (and context settings when given): all or nothing."""
    with tk.db.session() as session:
        result = update_settings(session, update, tk.keys, tk.resolver)
        if update.model is not None:  # the server settings, just saved, are what narrates
            from talekeeper.service import profiles

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
