"""The API's interactive documentation (`/docs`, Swagger UI), served whole from this machine.

FastAPI's own `/docs` and `/redoc` pages load their viewers from a CDN and start them with
an inline script: an offline machine cannot fetch the one, and the pages'
Content-Security-Policy (no inline script, nothing from elsewhere) refuses the other. This
page loads Swagger UI from the files the `fastapi-offline` package installs (served under
`/docs/assets/`) and starts it from `static/apidocs.js`, so it works with the network
unplugged and under the same policy as every other page.

ReDoc is not offered: it writes <style> elements at run time, runs its search in a worker
made from a blob, and shows a logo from its CDN, none of which the policy allows; `/redoc`
sends the reader to `/docs`.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse

ASSETS = Path(fastapi_offline.__file__).parent / "static"
# Only Swagger UI's two files are served (the package ships ReDoc's too).
SERVED = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css"}

router = APIRouter(include_in_schema=False)


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    openapi = escape(f"{root}{request.app.openapi_url}")
    return HTMLResponse(
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(request.app.title)} API</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="{root}/docs/assets/swagger-ui.css">'
        f'<link rel="icon" href="{root}/favicon.ico"></head>'
        f'<body><div id="swagger-ui" data-openapi-url="{openapi}"></div>'
        f'<script src="{root}/docs/assets/swagger-ui-bundle.js"></script>'
        f'<script src="{root}/static/apidocs.js"></script></body></html>'
    )


@router.get("/docs/assets/{name}")
def asset(name: str) -> FileResponse:
    if name not in SERVED:
        raise HTTPException(404, "No such file.")
    return FileResponse(ASSETS / name, media_type=SERVED[name])


@router.get("/redoc")
def redoc(request: Request) -> RedirectResponse:
    return RedirectResponse(f"{request.scope.get('root_path', '')}/docs", status_code=307)
