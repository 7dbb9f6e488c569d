"""An adventure's samplers page, /adventures/{id}/samplers (service/samplers.py does the work;
the JSON routes are `api_samplers.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from talekeeper.service import samplers
from talekeeper.service.app import Talekeeper
from talekeeper.web import flash
from talekeeper.web.deps import get_tk
from talekeeper.web.render import render

router = APIRouter(include_in_schema=False)


@router.get("/adventures/{adventure_id}/samplers", response_class=HTMLResponse)
async def samplers_page(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    return await _page(request, tk, adventure_id)


async def _page(
    request: Request,
    tk: Talekeeper,
    adventure_id: int,
    message: str | None = None,
    status_code: int = 200,
    typed: dict[str, Any] | None = None,
) -> HTMLResponse:
    view = samplers.of_adventure(tk, adventure_id)
    values = {**view.samplers.values.model_dump(), **(typed or {})}  # a refused form: as typed
    effective = view.samplers.effective.model_dump()
    offer = await samplers.offered(tk, adventure_id)
    ignored = [
        samplers.label(n) for n in effective if n not in offer.taken and n != "banned_phrases"
    ]
    return render(
        request,
        "samplers.html",
        status_code=status_code,
        adventure_id=adventure_id,
        title=view.title,
        choice=view.samplers,
        starters=samplers.starter_views(),
        own={n: v.model_dump() for n, v in view.presets.root.items() if n not in samplers.STARTERS},
        effective=effective,
        offer=offer,
        fields=offer.fields(values),
        missing=offer.missing(),
        ignored=ignored,
        label=samplers.label,
        message=message,
    )


@router.post("/adventures/{adventure_id}/samplers", response_class=HTMLResponse)
async def samplers_save(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> Response:
    """Save this adventure's preset and values; optionally also keep the values as a preset."""
    form = await request.form()
    values = {
        name: str(form.get(name, "")).strip()
        for name in samplers.FIELDS
        if str(form.get(name, "")).strip()
    }
    preset = str(form.get("preset", "")).strip() or None
    new_preset = str(form.get("save_as", "")).strip()
    try:
        samplers.choose(tk, adventure_id, preset, values, keep_as=new_preset)
    except samplers.SamplersInvalid as exc:
        return await _page(
            request, tk, adventure_id, message=str(exc), status_code=422, typed=values
        )
    saved = "Saved." + (
        f" The values are also kept as the preset “{new_preset}”." if new_preset else ""
    )
    return flash.redirect(f"/adventures/{adventure_id}/samplers", saved)
