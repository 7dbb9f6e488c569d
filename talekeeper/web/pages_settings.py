"""The Settings page: the model, generation, memory and context settings saved together
(all or nothing), the connection test, and the connections section with its "Add a
connection" form (its JSON routes are web/api_connections.py, a profile's own page
web/pages_connections.py). Each field is drawn from the settings model that declares it
(its title, help and bounds)."""

from __future__ import annotations

import asyncio
from typing import Any, get_args

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ValidationError

from talekeeper.context.generation import GenerationSettings
from talekeeper.context.settings import ContextSettings
from talekeeper.errors import TalekeeperError
from talekeeper.llm import services
from talekeeper.llm.errors import EndpointRefused, LLMError
from talekeeper.llm.settings import ModelSettings
from talekeeper.service import hosted, profiles
from talekeeper.service import samplers as samplers_service
from talekeeper.service import settings as settings_service
from talekeeper.service.app import Talekeeper
from talekeeper.store import owner
from talekeeper.views.settings import service_views
from talekeeper.web import flash, pages_connections
from talekeeper.web.deps import get_tk
from talekeeper.web.render import render

router = APIRouter(include_in_schema=False)
SAMPLER_NAMES = set(samplers_service.FIELDS)


def connections_context(tk: Talekeeper) -> dict[str, Any]:
    """What the Settings page's connections section shows."""
    return {
        "connection": profiles.connection_view(tk),
        "profiles": profiles.list_profiles(tk),
        "services": service_views(),
        "allowed": hosted.list_allowed(tk),
        "may_allow": owner.may_manage_installation(),
        "sentences": {s.host: hosted.sentence(s.host) for s in services.SERVICES if s.hosted},
    }


# --- settings -----------------------------------------------------------------------------

MEMORY_FIELDS = (
    "memory_enabled",
    "memory_every",
    "memory_start",
    "summary_every",
    "memory_top_k",
    "memory_capacity",
    "memory_max_words",
    "embedding_model",
)
CONTEXT_FIELDS = (
    "author_note_depth",
    "card_share",
    "card_budget",
    "card_recursion_depth",
    "memory_share",
    "trigger_window_turns",
    "history_step",
)


def form_fields(
    model: type[BaseModel], values: BaseModel, names: tuple[str, ...], errors: dict[str, str]
) -> list[dict[str, Any]]:
    """A settings model's fields as form inputs: label, help text, kind, bounds, value."""
    rows = []
    for name in names:
        info = model.model_fields[name]
        choices = (info.json_schema_extra or {}).get("choices")  # type: ignore[union-attr]
        bounds = {type(m).__name__: m for m in info.metadata}
        kind = "text"
        annotation = info.annotation
        given = [a for a in get_args(annotation) if a is not type(None)]
        if len(given) == 1:  # `float | None`: optional, shown empty when unset
            annotation = given[0]
        if annotation is bool:
            kind = "checkbox"
        elif annotation is int:
            kind = "int"
        elif annotation is float:
            kind = "float"
        elif choices:
            kind = "select"
        low = bounds.get("Ge") or bounds.get("Gt")
        high = bounds.get("Le") or bounds.get("Lt")
        rows.append(
            {
                "name": name,
                "label": samplers_service.label(name, info),
                "placeholder": samplers_service.suggested(name) if name in SAMPLER_NAMES else "",
                "help": info.description or "",
                "kind": kind,
                "min": getattr(low, "ge", getattr(low, "gt", None)) if low else None,
                "max": getattr(high, "le", getattr(high, "lt", None)) if high else None,
                "value": getattr(values, name),
                "choices": choices,
                "error": errors.get(name),
            }
        )
    return rows


def _settings_context(
    tk: Talekeeper,
    offer: samplers_service.Offer,
    errors: dict[str, str] | None = None,
    form: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The Settings page. `offer`: the samplers the default connection's server takes —
    the common ones are always offered (every connection's base), the others only there."""
    errors = errors or {}
    stored = settings_service.stored(tk)
    context = settings_service.context_settings_of(tk)
    generation = tk.generation()
    if form:  # a refused form shows what was typed, not what is stored
        typed = {k: v for k, v in form.get("model", {}).items() if k != "api_key"}
        stored = stored.model_copy(update={"model": stored.model.model_copy(update=typed)})
        generation = generation.model_construct(
            **{**generation.model_dump(), **form.get("generation", {})}
        )
        context = context.model_construct(**{**context.model_dump(), **form.get("context", {})})
    generation_names = tuple(
        name
        for name in GenerationSettings.model_fields
        if name not in SAMPLER_NAMES
        or name in samplers_service.COMMON
        or name in offer.taken
        or getattr(generation, name, None) not in (None, "")
    )
    # samplers set that the default connection does not take: said, not silently dropped
    ignored = [
        samplers_service.label(n)
        for n in tk.generation().samplers()
        if n not in offer.taken and n != "banned_phrases"
    ]
    return {
        "offer": offer,
        **connections_context(tk),
        "samplers_ignored": ignored,
        "section": "settings",
        "may_change_model": settings_service.may_change_model(),
        "stored": stored,
        "effective": tk.shown_settings(),
        "overridden": settings_service.overridden_fields(tk.model_overrides),
        "model": tk.model_description(),
        "model_help": {
            name: ModelSettings.model_fields[name].description
            for name in ("provider", "endpoint", "model", "mode", "api_key")
        },
        "generation_fields": form_fields(GenerationSettings, generation, generation_names, errors),
        "memory_fields": form_fields(ContextSettings, context, MEMORY_FIELDS, errors),
        "context_fields": form_fields(ContextSettings, context, CONTEXT_FIELDS, errors),
        "errors": errors,
    }


@router.get("/settings", response_class=HTMLResponse)
async def settings_page(request: Request, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    offer = await samplers_service.offered(tk)
    return render(request, "settings.html", **await asyncio.to_thread(_settings_context, tk, offer))


async def settings_page_with(
    request: Request, tk: Talekeeper, connection_error: str, form: dict[str, Any]
) -> HTMLResponse:
    """The Settings page with the "Add a connection" form refused: what was typed (never
    the key) and why, and the privacy sentence of the service it named."""
    form = {k: v for k, v in form.items() if k != "api_key"}
    preset = services.BY_ID.get(str(form.get("service") or ""))
    return render(
        request,
        "settings.html",
        status_code=422,
        connection_error=connection_error,
        form=form,
        form_sentence=hosted.sentence(preset.host) if preset and preset.hosted else "",
        **await asyncio.to_thread(_settings_context, tk, await samplers_service.offered(tk)),
    )


def _field_errors(exc: ValidationError) -> dict[str, str]:
    return {str(e["loc"][0]) if e["loc"] else "form": e["msg"] for e in exc.errors()}


@router.post("/settings", response_class=HTMLResponse)
async def save_settings(request: Request, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    """Save the model, generation, memory and context settings together: all or nothing."""
    form = await request.form()
    model_values: dict[str, Any] = {
        k: str(form.get(k, "")).strip() for k in ("provider", "endpoint", "model", "mode")
    }
    model_values = {k: (v or None) for k, v in model_values.items()}
    model_values["provider"] = model_values["provider"] or "auto"
    model_values["mode"] = model_values["mode"] or "chat"
    if str(form.get("api_key", "")).strip():
        model_values["api_key"] = str(form.get("api_key")).strip()
    if form.get("clear_api_key"):
        model_values["api_key"] = None
    generation = {k: str(form.get(k, "")) for k in GenerationSettings.model_fields if k in form}
    context_names = (*MEMORY_FIELDS, *CONTEXT_FIELDS)
    context = {
        k: str(form.get(k, "")) for k in context_names if k in form and k != "memory_enabled"
    }
    context["memory_enabled"] = bool(form.get("memory_enabled"))
    if "embedding_model" in context:
        context["embedding_model"] = context["embedding_model"].strip() or None
    typed = {"model": model_values, "generation": generation, "context": context}

    errors: dict[str, str] = {}
    for model_cls, values in (
        (GenerationSettings, generation),
        (ContextSettings, context),
    ):
        try:
            model_cls(**values)
        except ValidationError as exc:
            errors.update(_field_errors(exc))
    error = policy = None
    if not errors:
        try:
            # A player (accounts on) has no model fields to send: the host chooses the model.
            chosen = model_values if settings_service.may_change_model() else None
            update = settings_service.SettingsUpdate(model=chosen, generation=generation)
            settings_service.save(tk, update, context)
        except EndpointRefused as exc:
            error, policy = str(exc), True
        except (settings_service.SettingsError, LLMError, ValidationError) as exc:
            error = str(exc).splitlines()[0]
    else:
        error = "Some values are out of range; nothing was saved. See the fields marked below."
    if error:
        offer = await samplers_service.offered(tk)
        context_data = await asyncio.to_thread(_settings_context, tk, offer, errors, typed)
        return render(
            request, "settings.html", status_code=422, error=error, policy=policy, **context_data
        )
    offer = await samplers_service.offered(tk)
    return render(
        request,
        "settings.html",
        saved=True,
        **await asyncio.to_thread(_settings_context, tk, offer),
    )


@router.post("/settings/test", response_class=HTMLResponse)
async def test_connection(request: Request, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    try:
        report = (await tk.provider().check()).as_dict()
    except LLMError as exc:
        report = {
            "ok": False,
            "checks": [{"check": "configuration", "ok": False, "detail": str(exc)}],
        }
    return render(
        request,
        "_connection.html",
        report=report,
        policy=any("not allowed" in str(c.get("detail")) for c in report.get("checks", [])),
    )


@router.post("/settings/profiles", response_class=HTMLResponse)
async def add_profile(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    """Add a connection (allowing its hosted service first, when the box is ticked), then
    open its page to pick a model."""
    form = await request.form()
    try:
        pages_connections.allow_if_asked(tk, form)
        created = profiles.keep(tk, pages_connections.profile_in(form))
    except (TalekeeperError, ValidationError) as exc:
        return await settings_page_with(
            request, tk, connection_error=pages_connections.refusal(exc), form=dict(form)
        )
    return flash.redirect(
        f"/settings/profiles/{created.id}",
        f"Saved “{created.name}”. Pick a model, then use it.",
    )
