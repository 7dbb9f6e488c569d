"""Pages for export and import: download an adventure, import a bundle from the home page."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse

from talekeeper.core import Talekeeper
from talekeeper.service import bundles
from talekeeper.web import pages
from talekeeper.web.api import get_tk
from talekeeper.web.api_interop import export_response

router = APIRouter(include_in_schema=False)


@router.get("/adventures/{adventure_id}/export")
def export_adventure(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> StreamingResponse:
    return export_response(tk, adventure_id)


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
        result = bundles.import_file(tk, _Reopen(upload.file), size)
    except bundles.BundleInvalid as exc:
        return pages._home(request, tk, 422, bundle_error=str(exc))
    return RedirectResponse(f"/adventures/{result.adventure_id}", status_code=303)
