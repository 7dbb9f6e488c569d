"""One Jinja2 environment for every page (shared filters from `present`), and `render`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from talekeeper.web import flash, present
from talekeeper.web.emphasis import emphasis

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
present.install(templates.env)
templates.env.filters["emphasis"] = emphasis


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    waiting = flash.take(request)  # a redirect's "Saved." (see web/flash.py), shown once
    if waiting and not context.get("message") and request.headers.get("HX-Request") != "true":
        context["message"] = waiting
    response = templates.TemplateResponse(request, name, context, status_code=status_code)
    if waiting:
        flash.forget(response)
    return response
