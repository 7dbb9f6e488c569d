"""Connections' pages: one profile's page, the play page's switch and sampler preset.

The Settings page's connections section is `pages_settings.py`, which uses the form helpers
here; the JSON routes are `api_connections.py`. Both call the same services
(service/profiles.py, service/hosted.py). No page ever shows an API key.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from talekeeper.errors import TalekeeperError
from talekeeper.llm import services
from talekeeper.llm.errors import LLMError
from talekeeper.service import hosted, play_page, profiles
from talekeeper.service import samplers as sampler_choice
from talekeeper.service.app import Talekeeper
from talekeeper.service.play_page import Note
from talekeeper.views.settings import ModelListView, ProfileView, service_views
from talekeeper.web import flash
from talekeeper.web.deps import get_tk
from talekeeper.web.render import render

router = APIRouter(include_in_schema=False)


def profile_in(
    form: Any, current: ProfileView | None = None, samplers: dict[str, Any] | None = None
) -> profiles.ProfileIn:
    """A profile from a form; fields the form does not carry keep `current`'s values (and
    its samplers, unless the form showed its own: `samplers`)."""

    def text(name: str) -> str | None:
        value = form.get(name)
        return str(value) if value is not None else getattr(current, name, None)

    if samplers is None:
        samplers = current.samplers.model_dump() if current is not None else {}
    return profiles.ProfileIn(
        name=text("name") or "",
        service=text("service") or "custom",
        endpoint=text("endpoint"),
        model=text("model"),
        mode=text("mode") or "chat",
        api_key=str(form.get("api_key") or "") or None,
        forget_key=bool(form.get("forget_key")),
        samplers=samplers,
        context_budget=text("context_budget")
        if "context_budget" in form
        else getattr(current, "context_budget", None),
    )


def refusal(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        return f"{where}: {error['msg']}" if where else error["msg"]
    return str(exc)


def allow_if_asked(tk: Talekeeper, form: Any) -> None:
    """The form's "allow this host" box, ticked after reading the privacy sentence."""
    if form.get("allow_host"):
        preset = services.BY_ID.get(str(form.get("service") or ""))
        endpoint = str(form.get("endpoint") or "") or (preset.base_url if preset else "")
        host = services.host_of(endpoint)
        if host:
            hosted.allow_host(tk, host)


async def _profile_page(
    request: Request,
    tk: Talekeeper,
    profile_id: int,
    message: str | None = None,
    status: int = 200,
    typed: dict[str, Any] | None = None,
) -> HTMLResponse:
    profile = profiles.read(tk, profile_id)
    offer = await profiles.offered_for(tk, profile_id)
    return render(
        request,
        "profile.html",
        status_code=status,
        section="settings",
        profile=profile,
        offer=offer,
        fields=offer.fields({**profile.samplers.model_dump(), **(typed or {})}),
        missing=offer.missing(),
        services=service_views(),
        connection=profiles.connection_view(tk),
        message=message,
        sentence=hosted.sentence(profile.host) if profile.hosted else None,
    )


@router.get("/settings/profiles/{profile_id}", response_class=HTMLResponse)
async def profile_page(
    request: Request, profile_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    return await _profile_page(request, tk, profile_id)


@router.post("/settings/profiles/{profile_id}", response_class=HTMLResponse)
async def save_profile(
    request: Request, profile_id: int, tk: Talekeeper = Depends(get_tk)
) -> Response:
    """Save a connection's fields; with `use`, it also becomes the default connection."""
    form = await request.form()
    samplers = {
        name: str(form.get(name) or "").strip()
        for name in sampler_choice.FIELDS
        if str(form.get(name) or "").strip()
    }
    try:
        current = profiles.read(tk, profile_id)
        # the page's sampler fields, when it showed them, are the profile's samplers
        shown = samplers if "samplers_shown" in form else None
        saved = profiles.keep(tk, profile_in(form, current, shown), profile_id)
        if form.get("use"):
            profiles.use_by_default(tk, saved.id)
    except (TalekeeperError, ValidationError) as exc:
        return await _profile_page(
            request, tk, profile_id, message=refusal(exc), status=422, typed=samplers
        )
    if form.get("use"):
        return flash.redirect("/settings#connections", f"Now narrating with “{saved.name}”.")
    return flash.redirect(f"/settings/profiles/{profile_id}", "Saved.")


@router.post("/settings/profiles/{profile_id}/delete", response_class=HTMLResponse)
def remove_profile(profile_id: int, tk: Talekeeper = Depends(get_tk)) -> Response:
    profiles.forget(tk, profile_id)
    return flash.redirect("/settings#connections", "Connection deleted.")


@router.get("/settings/profiles/{profile_id}/models", response_class=HTMLResponse)
async def models_fragment(
    request: Request, profile_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    """The model picker, filled from the service's own list."""
    profile = profiles.read(tk, profile_id)
    try:
        listing = await profiles.models_of(tk, profile_id)
        error = None
    except (LLMError, TalekeeperError) as exc:
        listing, error = ModelListView(models=[], turn_size=""), str(exc)
    return render(request, "_models.html", profile=profile, listing=listing, error=error)


@router.post("/settings/connection", response_class=HTMLResponse)
async def use_connection(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    try:
        profiles.use_by_default(tk, profiles.parse_choice(form.get("use")))
    except TalekeeperError as exc:
        return flash.redirect("/settings#connections", str(exc))
    name = profiles.connection_view(tk).name
    return flash.redirect("/settings#connections", f"Now narrating with {name}.")


@router.post("/settings/hosts", response_class=HTMLResponse)
async def allow_host(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    try:
        allowed = hosted.allow_host(tk, str(form.get("host") or ""))
    except TalekeeperError as exc:
        return flash.redirect("/settings#hosted", str(exc))
    return flash.redirect("/settings#hosted", f"{allowed.host} may now receive your story.")


@router.post("/settings/hosts/{host}/revoke", response_class=HTMLResponse)
def revoke_host(host: str, tk: Talekeeper = Depends(get_tk)) -> Response:
    try:
        hosted.revoke_host(tk, host)
    except TalekeeperError as exc:
        return flash.redirect("/settings#hosted", str(exc))
    return flash.redirect(
        "/settings#hosted", f"{host} no longer receives anything; its connections are refused."
    )


def note_context(adventure_id: int, note: Note) -> dict[str, Any]:
    """What the play page's model line shows: the connection and the sampler preset."""
    starter = sampler_choice.STARTERS.get(note.preset or "")
    return {
        "adventure_id": adventure_id,
        "connection": note.connection,
        "presets": {
            **{n: s["description"] for n, s in sampler_choice.starter_views().items()},
            **{n: "one of yours" for n in note.own_presets},
        },
        "preset": note.preset,
        "preset_about": starter.description if starter else "",
    }


def _note_response(request: Request, tk: Talekeeper, adventure_id: int, error: str | None):
    """The model line alone, answered after a switch (with why, if refused)."""
    context = note_context(adventure_id, play_page.note(tk, adventure_id))
    return render(request, "_connection_note.html", switch_error=error, **context)


@router.post("/adventures/{adventure_id}/samplers/preset", response_class=HTMLResponse)
async def preset_for_adventure(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    """The play page's sampler preset: chosen for this adventure, answered with the line."""
    form = await request.form()
    try:
        sampler_choice.choose_preset(tk, adventure_id, str(form.get("preset") or "") or None)
        error = None
    except TalekeeperError as exc:
        error = str(exc)
    return _note_response(request, tk, adventure_id, error)


@router.post("/adventures/{adventure_id}/connection", response_class=HTMLResponse)
async def switch_for_adventure(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    """The play page's switch: this adventure's connection, answered with the new note."""
    form = await request.form()
    try:
        profiles.use_for_adventure(tk, adventure_id, profiles.parse_choice(form.get("use")))
        error = None
    except TalekeeperError as exc:
        error = str(exc)
    return _note_response(request, tk, adventure_id, error)
