"""Server-rendered pages (Jinja2 + HTMX). Each calls the same services as the JSON API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from talekeeper.core import Talekeeper
from talekeeper.llm.errors import LLMError
from talekeeper.service import adventures, scenarios
from talekeeper.service import settings as settings_service
from talekeeper.service.locks import AdventureBusy
from talekeeper.story import tree
from talekeeper.web.api import get_tk

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
router = APIRouter(include_in_schema=False)


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(request, name, context, status_code=status_code)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    with tk.db.session() as session:
        adventure_rows = [adventures.adventure_summary(session, a) for a in adventures.list_adventures(session)]
        scenario_rows = [scenarios.scenario_summary(s) for s in scenarios.list_scenarios(session)]
    return render(
        request,
        "home.html",
        adventures=adventure_rows,
        scenarios=scenario_rows,
        model=tk.model_description(),
    )


@router.post("/adventures")
async def start(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    form = await request.form()
    scenario_id = str(form.get("scenario_id", ""))
    answers = {k[len("answer_"):]: str(v) for k, v in form.items() if k.startswith("answer_")}
    try:
        with tk.db.session() as session:
            adventure = adventures.start_adventure(session, scenario_id, answers)
            adventure_id = adventure.id
    except scenarios.ScenarioError as exc:
        return HTMLResponse(f"<p role='alert'>{_escape(str(exc))}</p>", status_code=422)
    return RedirectResponse(f"/adventures/{adventure_id}", status_code=303)


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


@router.get("/adventures/{adventure_id}", response_class=HTMLResponse)
def play(request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    with tk.db.session() as session:
        view = adventures.story_view(session, adventures.get_adventure(session, adventure_id))
    return render(request, "play.html", story=view, model=tk.model_description())


@router.get("/adventures/{adventure_id}/story", response_class=HTMLResponse)
def story_fragment(
    request: Request, adventure_id: int, before: int | None = None, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    with tk.db.session() as session:
        view = adventures.story_view(session, adventures.get_adventure(session, adventure_id), before=before)
    name = "_older.html" if before else "_story.html"
    return render(request, name, story=view)


def _move(request: Request, adventure_id: int, move, tk: Talekeeper) -> HTMLResponse:
    message = None
    try:
        with tk.locks.hold(adventure_id), tk.db.session() as session:
            move(session, adventures.get_adventure(session, adventure_id))
    except (tree.TreeError, AdventureBusy) as exc:
        message = str(exc)
    with tk.db.session() as session:
        view = adventures.story_view(session, adventures.get_adventure(session, adventure_id))
    return render(request, "_story.html", story=view, message=message)


@router.post("/adventures/{adventure_id}/undo", response_class=HTMLResponse)
def undo(request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    return _move(request, adventure_id, tree.undo, tk)


@router.post("/adventures/{adventure_id}/redo", response_class=HTMLResponse)
def redo(request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    return _move(request, adventure_id, tree.redo, tk)


@router.delete("/adventures/{adventure_id}", response_class=HTMLResponse)
def delete(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    with tk.locks.hold(adventure_id), tk.db.session() as session:
        adventures.delete_adventure(session, adventures.get_adventure(session, adventure_id))
    return HTMLResponse("")


def _settings_context(tk: Talekeeper) -> dict[str, Any]:
    with tk.db.session() as session:
        stored = settings_service.stored_settings(session)
    return {
        "stored": stored,
        "effective": tk.model_settings(),
        "generation": tk.generation(),
        "overridden": settings_service.overridden_fields(tk.model_overrides),
        "model": tk.model_description(),
    }


@router.get("/settings", response_class=HTMLResponse)
def settings_page(request: Request, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    return render(request, "settings.html", **_settings_context(tk))


@router.post("/settings", response_class=HTMLResponse)
def save_settings(
    request: Request,
    provider: str = Form("auto"),
    endpoint: str = Form(""),
    model: str = Form(""),
    mode: str = Form("chat"),
    api_key: str = Form(""),
    max_tokens: int = Form(220),
    temperature: float = Form(0.8),
    context_budget: int = Form(3072),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    model_values: dict[str, Any] = {
        "provider": provider,
        "endpoint": endpoint.strip() or None,
        "model": model.strip() or None,
        "mode": mode,
    }
    if api_key.strip():
        model_values["api_key"] = api_key.strip()
    update = settings_service.SettingsUpdate(
        model=model_values,
        generation={"max_tokens": max_tokens, "temperature": temperature, "context_budget": context_budget},
    )
    error = None
    try:
        with tk.db.session() as session:
            settings_service.update_settings(session, update)
    except (settings_service.SettingsError, LLMError) as exc:
        error = str(exc)
    status = 422 if error else 200
    return render(
        request, "settings.html", status_code=status, error=error, saved=not error, **_settings_context(tk)
    )


@router.post("/settings/test", response_class=HTMLResponse)
async def test_connection(request: Request, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    try:
        report = (await tk.provider().check()).as_dict()
    except LLMError as exc:
        report = {"ok": False, "checks": [{"check": "configuration", "ok": False, "detail": str(exc)}]}
    return render(request, "_connection.html", report=report)
