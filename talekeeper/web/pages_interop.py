"""Pages for export and import: download an adventure, import a bundle from the home page,
and import a card, lorebook or other app's file with a review step before it is saved."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from talekeeper.errors import TalekeeperError
from talekeeper.interop import bundles, imports, starter
from talekeeper.service import json_depth
from talekeeper.service.app import Talekeeper
from talekeeper.web import flash, pages
from talekeeper.web.deps import get_tk
from talekeeper.web.downloads import adventure_bundle
from talekeeper.web.render import render

router = APIRouter(include_in_schema=False)


@router.get("/adventures/{adventure_id}/export")
def export_adventure(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> StreamingResponse:
    return adventure_bundle(tk, adventure_id)


class _Reopen:
    """Reopen an uploaded file from its start (import reads it twice)."""

    def __init__(self, file: Any):
        self.file = file

    def __call__(self) -> _Reopen:
        return self

    def __enter__(self) -> Any:
        self.file.seek(0)
        return self.file

    def __exit__(self, *exc: Any) -> None:
        return None


@router.post("/adventures/import")
async def import_adventure(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    upload = form.get("file")
    if upload is None or isinstance(upload, str) or not upload.filename:
        return pages._home(
            request,
            tk,
            422,
            bundle_error="Choose an adventure file (exported from talekeeper) to import.",
        )
    upload.file.seek(0, 2)
    size = upload.file.tell()
    try:
        result = await run_in_threadpool(bundles.import_file, tk, _Reopen(upload.file), size)
    except bundles.BundleInvalid as exc:
        return pages._home(request, tk, 422, bundle_error=str(exc))
    return RedirectResponse(f"/adventures/{result.adventure_id}", status_code=303)


@router.post("/adventures/starter")
async def open_starter(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    """A new copy of the starter adventure, opened at the moment it was left."""
    result = await run_in_threadpool(starter.open_starter, tk)
    return RedirectResponse(f"/adventures/{result.adventure_id}", status_code=303)


@router.post("/interop/import")
async def import_preview(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    upload = form.get("file")
    if upload is None or isinstance(upload, str) or not upload.filename:
        return _scenarios_page(request, tk, "Choose a file to import.")
    raw = await upload.read()
    try:
        preview = await run_in_threadpool(imports.preview, tk, raw, upload.filename)
    except imports.Refused as exc:
        return _scenarios_page(request, tk, f"{exc} Nothing was imported.")
    documents = [json.dumps(item.scenario, ensure_ascii=False) for item in preview.items]
    own = imports.own_scenarios(tk)
    return render(
        request,
        "interop_review.html",
        section="scenarios",
        preview=preview,
        documents=documents,
        own=own,
    )


@router.post("/interop/save")
async def import_save(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    into = str(form.get("into", "")).strip()
    try:
        document = json_depth.loads(str(form.get("document", "")))
        if into:
            saved = imports.add_cards(tk, into, document)
            message = f"Added {saved.added} story cards to this scenario."
        else:
            saved = imports.save(tk, document)
            message = "Imported. Start an adventure with it below, or look it over first."
    except (json.JSONDecodeError, TalekeeperError) as exc:
        return _scenarios_page(request, tk, f"The reviewed scenario could not be saved: {exc}")
    return flash.redirect(f"/scenarios/{saved.id}", message)


def _scenarios_page(request: Request, tk: Talekeeper, error: str) -> Response:
    from talekeeper.web.pages_scenarios import _list_page

    return _list_page(request, tk, 422, card_error=error)
