"""One Jinja2 environment for every page (shared filters from `present`), and `render`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from talekeeper.story.actions import RETOLD
from talekeeper.web import flash, present
from talekeeper.web.emphasis import emphasis

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
# The templates ship with the package and do not change while the app runs: no stat() of
# each one at every render (a story page includes one per turn), and web/turns.py keeps
# rendered turns under the templates' digest.
templates.env.auto_reload = False
present.install(templates.env)
templates.env.filters["emphasis"] = emphasis
templates.env.globals["RETOLD_KINDS"] = RETOLD  # the action kinds an edit or a dry run takes


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    waiting = flash.take(request)  # a redirect's "Saved." (see web/flash.py), shown once
    if waiting and not context.get("message") and request.headers.get("HX-Request") != "true":
        context["message"] = waiting
    response = templates.TemplateResponse(request, name, context, status_code=status_code)
    if waiting:
        flash.forget(response)
    return response
