"""Server-rendered pages (Jinja2 + HTMX): home (with renaming) and play (with search); the
Settings page is `pages_settings.py`. Each calls the same services as the JSON API
(`api.py`); refusals are shown on the page in words."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, BackgroundTasks, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from talekeeper.errors import Conflict, Invalid, NotFound
from talekeeper.service import adventures, corrections, scenarios, tree_ops
from talekeeper.service import plot as plot_service
from talekeeper.service.adventures import AdventureTitleInvalid, Shown
from talekeeper.service.app import Talekeeper
from talekeeper.service.play_page import play_page
from talekeeper.service.search import search_story
from talekeeper.service.turns import warm_next_turn
from talekeeper.state.creation import CreationError
from talekeeper.web import pages_connections, turns
from talekeeper.web.deps import get_tk
from talekeeper.web.render import render, templates  # noqa: F401 - `templates` is imported from here too

router = APIRouter(include_in_schema=False)
PANELS = ("state", "lines", "save-points")


# --- home ---------------------------------------------------------------------------------


def _home(request: Request, tk: Talekeeper, status_code: int = 200, **extra: Any) -> HTMLResponse:
    # The pages get the API's own views (attribute access in templates works on both).
    adventure_rows = adventures.summaries(tk)
    latest = adventures.latest(tk)
    scenario_rows = scenarios.summaries(tk)
    return render(
        request,
        "home.html",
        status_code=status_code,
        section="home",
        adventures=adventure_rows,
        latest=latest,
        scenarios=scenario_rows,
        model=tk.model_description(),
        **extra,
    )


@router.get("/", response_class=HTMLResponse)
def home(request: Request, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    return _home(request, tk)


@router.post("/adventures")
async def start(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    """Start an adventure: the scenario's placeholders answered, the persona optionally set."""
    form = await request.form()
    scenario_id = str(form.get("scenario_id", ""))
    answers = {k[len("answer_") :]: str(v) for k, v in form.items() if k.startswith("answer_")}
    persona = {
        k: str(form.get(f"persona_{k}", "")).strip() for k in ("name", "pronouns", "description")
    }
    character = character_from_form(form)
    try:
        origin_id = str(form.get("origin_id") or "") or None
        chosen = plot_service.Persona(**persona).model_dump() if any(persona.values()) else None
        adventure_id = adventures.start(
            tk, scenario_id, answers, origin_id=origin_id, persona=chosen, character=character
        ).id
    except (Invalid, NotFound, ValidationError) as exc:  # mistakes, an unknown scenario or origin
        # Shown in the scenario's own form, beside the field, with every choice kept.
        return _home(
            request,
            tk,
            status_code=422,
            start_error=_first_error(exc) if isinstance(exc, ValidationError) else str(exc),
            start_scenario=scenario_id,
            start_values={k: str(v) for k, v in form.items() if isinstance(v, str)},
            start_field_errors=creation_field_errors(exc),
        )
    return RedirectResponse(f"/adventures/{adventure_id}", status_code=303)


def creation_field_errors(exc: Exception) -> dict[str, str]:
    """A refused character's mistakes by the field they belong beside: name, class, stats."""
    cause = exc.__cause__
    if not isinstance(cause, CreationError):
        return {}
    fields: dict[str, list[str]] = {}
    for error in cause.errors:
        where, _, said = error.partition(": ")
        field = where.split(".")[0]
        if field == "stats" and "." in where:
            said = f"{where.split('.', 1)[1].capitalize()}: {said}"
        elif field == "stats" and (spent := _OVERSPENT.match(said)):
            over = int(spent["spent"]) - int(spent["have"])
            said = f"You spent {spent['spent']} points and have {spent['have']}: take {over} off."
        fields.setdefault(field if field in ("name", "class") else "stats", []).append(said)
    return {field: " ".join(said) for field, said in fields.items()}


_OVERSPENT = re.compile(r"(?P<spent>\d+) points spent; you have (?P<have>\d+)")


@router.post("/adventures/blank")
async def start_blank(request: Request, tk: Talekeeper = Depends(get_tk)) -> Response:
    """A blank adventure from the home page: the player's own first lines."""
    form = await request.form()
    values = {k: str(form.get(k, "")) for k in ("opening", "title")}
    try:
        start = adventures.BlankStart(opening=values["opening"], title=values["title"] or None)
        adventure_id = adventures.start_from_blank(tk, start).id
    except (Invalid, ValidationError) as exc:
        message = (
            "Write how your story begins (at most 4,000 characters)."
            if isinstance(exc, ValidationError)
            else str(exc)
        )
        return _home(request, tk, status_code=422, blank_error=message, blank_values=values)
    return RedirectResponse(f"/adventures/{adventure_id}", status_code=303)


def character_from_form(form: Any) -> dict[str, Any] | None:
    if not form.get("character"):
        return None
    stats = {}
    for key, value in form.items():
        if key.startswith("stat_") and str(value).strip():
            try:
                stats[key[len("stat_") :]] = int(str(value))
            except ValueError:
                stats[key[len("stat_") :]] = str(value)  # refused by creation, by name
    choice: dict[str, Any] = {"name": str(form.get("character_name", "")).strip()}
    if form.get("character_class"):
        choice["class"] = str(form["character_class"])
    if stats:
        choice["stats"] = stats
    return choice


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


@router.delete("/adventures/{adventure_id}", response_class=HTMLResponse)
def delete(adventure_id: int, tk: Talekeeper = Depends(get_tk)) -> HTMLResponse:
    adventures.delete(tk, adventure_id)
    return HTMLResponse("")


@router.post("/adventures/{adventure_id}/rename", response_class=HTMLResponse)
def rename(
    request: Request, adventure_id: int, title: str = Form(""), tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    """The home page's rename form: answers with the adventure's card (and why, if refused)."""
    message = None
    try:
        summary = adventures.rename(tk, adventure_id, title)
    except AdventureTitleInvalid as exc:
        message = str(exc)
        summary = adventures.summary(tk, adventure_id)
    # 200 either way: htmx swaps the card in, with the refusal written on it.
    return render(request, "_adventure_card.html", a=summary, message=message)


# --- play ---------------------------------------------------------------------------------


@router.get("/adventures/{adventure_id}", response_class=HTMLResponse)
def play(
    request: Request,
    background: BackgroundTasks,
    adventure_id: int,
    panel: str | None = None,
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    """The story; `?panel=state|lines|save-points` opens that side panel."""
    page = play_page(tk, adventure_id)
    # while the player reads and types; with the settings the page read (none read again)
    background.add_task(warm_next_turn, tk, adventure_id, page.note.settings)
    return render(
        request,
        "play.html",
        **turns.drawn(page.answer),
        **pages_connections.note_context(adventure_id, page.note),
        panel=panel if panel in PANELS else None,
        voices=page.voices,
    )


@router.get("/adventures/{adventure_id}/search", response_class=HTMLResponse)
def search(
    request: Request, adventure_id: int, q: str = "", tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    result = search_story(tk, adventure_id, q)
    return render(request, "search.html", adventure_id=adventure_id, **dict(result))


@router.get("/adventures/{adventure_id}/story", response_class=HTMLResponse)
def story_fragment(
    request: Request,
    adventure_id: int,
    before: int | None = None,
    shown_head: int | None = None,
    shown_first: int | None = None,
    shown_stale: int | None = None,
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    """The story: what changed since the page showed `shown_first`…`shown_head` (after a
    turn; `shown_stale`: a turn it drew while its state was being updated), else drawn
    afresh; with `before`, the turns before that one."""
    shown = Shown(shown_head, shown_first, shown_stale)
    answer = adventures.story_for_page(tk, adventure_id, shown, before)
    return turns.story_response(request, answer, older=before is not None)


def _move(request: Request, adventure_id: int, move, tk: Talekeeper, shown: Shown) -> HTMLResponse:
    """Undo or redo (the services' own), then what changed; a refusal is shown under it."""
    try:
        return turns.story_response(request, move(tk, adventure_id, shown))
    except Conflict as exc:  # nothing to undo / redo, or busy
        answer = adventures.story_for_page(tk, adventure_id, shown)
        return turns.story_response(request, answer, message=str(exc))


@router.post("/adventures/{adventure_id}/undo", response_class=HTMLResponse)
def undo(
    request: Request,
    adventure_id: int,
    shown_head: int | None = Form(None),
    shown_first: int | None = Form(None),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    return _move(request, adventure_id, tree_ops.undo, tk, Shown(shown_head, shown_first))


@router.post("/adventures/{adventure_id}/redo", response_class=HTMLResponse)
def redo(
    request: Request,
    adventure_id: int,
    shown_head: int | None = Form(None),
    shown_first: int | None = Form(None),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    return _move(request, adventure_id, tree_ops.redo, tk, Shown(shown_head, shown_first))


@router.post(
    "/adventures/{adventure_id}/turns/{turn_id}/contradictions/{index}/accept",
    response_class=HTMLResponse,
)
def accept_contradiction(
    request: Request,
    adventure_id: int,
    turn_id: int,
    index: int,
    shown_head: int | None = Form(None),
    shown_first: int | None = Form(None),
    tk: Talekeeper = Depends(get_tk),
) -> HTMLResponse:
    """It's right — update the state (service/corrections.accept), then what changed; a
    refusal (the rules say no, the turn is no longer the last) is shown under the story."""
    message = None
    try:
        corrections.accept(tk, adventure_id, turn_id, index)
    except corrections.CorrectionRefused as exc:
        refused = [c["chip"]["text"] for c in exc.errors if c.get("status") == "rejected"]
        message = "The state was not changed: " + ("; ".join(refused) or str(exc))
    except (Conflict, NotFound) as exc:
        message = str(exc)
    answer = adventures.story_for_page(tk, adventure_id, Shown(shown_head, shown_first))
    return turns.story_response(request, answer, message=message)
