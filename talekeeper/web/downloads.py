"""Answers a browser saves as a file: the one header that says so, and the adventure bundle
that the JSON API and the page both offer (a page may not import a JSON route's module)."""

from __future__ import annotations

from fastapi.responses import StreamingResponse

from talekeeper.interop import bundles
from talekeeper.interop.bundle_format import MEDIA_TYPE
from talekeeper.service.app import Talekeeper


def saved_as(filename: str) -> dict[str, str]:
    """The header that makes the answer a download named `filename`."""
    return {"Content-Disposition": f'attachment; filename="{filename}"'}


def adventure_bundle(tk: Talekeeper, adventure_id: int) -> StreamingResponse:
    """The whole adventure as a bundle file, streamed as it is written."""
    filename, chunks = bundles.export_download(tk, adventure_id)
    return StreamingResponse(chunks, media_type=MEDIA_TYPE, headers=saved_as(filename))
