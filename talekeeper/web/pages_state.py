"""The state panel on the play page (HTMX fragments): the state at the moment being read,
grouped for reading; the player's corrections (the audit trail is in Insights:
`pages_context.audit_page`).

Corrections go through `service.corrections.correct`, the same validator and bookkeeping
as the JSON API and the terminal: a correction that changes something becomes a step of the story (Undo takes
it back) and answers with the `story-changed` trigger; a refused one changes nothing and
says why, in words.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from talekeeper.errors import Conflict
from talekeeper.service import corrections
from talekeeper.service.app import Talekeeper
from talekeeper.state.document import Entity
from talekeeper.state.stats import typed_number
from talekeeper.views.state import StatRow
from talekeeper.web.deps import get_tk
from talekeeper.web.render import render

router = APIRouter(prefix="/adventures/{adventure_id}/state", include_in_schema=False)
GROUPS = {"person": "Characters", "place": "Places", "item": "Items"}


def _number(text: str) -> Any:
    """A typed number as a number (5, -2.5); anything else as typed, for the validator to judge."""
    value = typed_number(text)
    return text.strip() if value is None else value


def panel_context(tk: Talekeeper, adventure_id: int) -> dict[str, Any]:
    """The grouped state at the moment being read, and the choices the correction form offers."""
    state = corrections.state_at_head(tk, adventure_id)
    view, names = state.at.view, state.names
    entities = view.entities
    holders = {p.item: p.holder_name for p in view.possessions}
    groups: list[tuple[str, list[Entity]]] = []
    for kind in ("person", "place", "item"):
        if entities.get(kind):
            groups.append((GROUPS[kind], entities[kind]))
    for kind, items in sorted(entities.items()):
        if kind not in GROUPS and kind != "player":
            groups.append((kind.replace("_", " ").capitalize(), items))
    stat_groups: dict[str, list[StatRow]] = {}
    for stat in view.stats:
        owner = {"world": "The world", "player": "You"}.get(
            stat.owner, names.get(stat.owner, stat.owner)
        )
        stat_groups.setdefault(owner, []).append(stat)
    player = (entities.get("player") or [None])[0]
    scene = view.scene
    return {
        "adventure_id": adventure_id,
        "has_rules": state.has_rules,
        "view": view,
        "player": player,
        "scene": {
            "location": names.get(scene.location, scene.location) if scene.location else None,
            "present": [names.get(p, p) for p in scene.present],
            "time": scene.time,
            "summary": scene.summary,
        },
        "names": names,
        "scene_note": state.scene_note,
        "holders": holders,
        "groups": groups,
        "stat_groups": stat_groups,
        "open_threads": [t for t in view.threads if t.status == "open"],
        "closed_threads": [t for t in view.threads if t.status != "open"],
        "facts": [f for f in view.facts if f.status == "active"],
        "relationships": [r for r in view.relationships if r.status == "active"],
        "choices": {
            "stats": list(view.stats),
            "flags": view.flags,
            "milestones": [m for m in view.milestones if m.reached_at is None],
            "things": entities.get("item", []),
            "holders": entities.get("player", []) + entities.get("person", []),
            "movers": (
                entities.get("player", []) + entities.get("person", []) + entities.get("item", [])
            ),
            "places": entities.get("place", []),
            "entities": [e for kind in entities.values() for e in kind],
        },
    }


def _panel(
    request: Request, tk: Talekeeper, adventure_id: int, status_code: int = 200, **extra: Any
) -> HTMLResponse:
    return render(
        request, "_state.html", status_code=status_code, **panel_context(tk, adventure_id), **extra
    )


@router.get("/panel", response_class=HTMLResponse)
def state_panel(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    return _panel(request, tk, adventure_id)


def events_from_form(form: Any) -> list[Any]:
    """The correction form's fields as events from the model's own vocabulary."""
    kind = str(form.get("kind", ""))
    get = lambda name: str(form.get(name, "")).strip()  # noqa: E731
    if kind == "set_stat":
        return [{"type": "set_stat", "stat": get("stat"), "value": _number(get("value"))}]
    if kind == "change_stat":
        return [{"type": "change_stat", "stat": get("stat"), "by": _number(get("by"))}]
    if kind == "set_flag":
        return [{"type": "set_flag", "flag": get("flag"), "value": get("value") == "on"}]
    if kind == "reach_milestone":
        return [{"type": "reach_milestone", "milestone": get("milestone")}]
    if kind == "set_possession":
        return [{"type": "set_possession", "item": get("item"), "holder": get("holder")}]
    if kind == "set_location":
        return [
            {"type": "set_location", "entity": get("entity"), "location": get("location") or None}
        ]
    if kind == "set_status":
        return [{"type": "set_status", "entity": get("entity"), "status": get("status")}]
    if kind == "add_fact":
        return [
            {
                "type": "add_fact",
                "subject": get("subject"),
                "predicate": get("predicate"),
                "object": get("object"),
            }
        ]
    if kind == "json":
        return corrections.events_from_json(str(form.get("events", "")))
    raise ValueError("Choose what to correct.")


@router.post("/correct", response_class=HTMLResponse)
async def correct(
    request: Request, adventure_id: int, tk: Talekeeper = Depends(get_tk)
) -> HTMLResponse:
    form = await request.form()
    try:
        answer = corrections.correct(tk, adventure_id, events_from_form(form))
    except corrections.CorrectionRefused as exc:
        return _panel(
            request,
            tk,
            adventure_id,
            result={"ok": False, "message": str(exc), "changes": exc.errors},
        )
    except (ValueError, Conflict) as exc:  # the form, a refused correction (Invalid), busy
        message = str(exc).splitlines()[0]
        return _panel(
            request, tk, adventure_id, result={"ok": False, "message": message, "changes": []}
        )
    response = _panel(request, tk, adventure_id, result={"ok": True, "changes": answer.changes})
    response.headers["HX-Trigger"] = "story-changed"
    return response
